package netproxy

import (
	"bytes"
	"context"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// tool runs a real client with only PATH and HOME from the environment
// (no proxy settings of the machine's) plus env; it returns its exit
// code, stdout and stderr. The context only guards against a hang.
func tool(t *testing.T, env []string, name string, args ...string) (int, string, string) {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed", name)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, env...)
	cmd.Stdin = strings.NewReader("")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s hung: %s", name, stderr.String())
	}
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

// curlSetup serves registry.test (HTTPS, allowed by the verdict) and
// plain.test (HTTP, allowed) through a proxy; evil.test resolves but no
// rule names it.
func curlSetup(t *testing.T) (p *Proxy, addr, caFile string) {
	t.Helper()
	tlsAddr := addrOf(t, tlsServer(t, "registry ok", "registry.test", "evil.test"))
	plainAddr := netip.MustParseAddrPort(plainServer(t).Listener.Addr().String())
	allow := rules(t, "knowledge: npm", "registry.test", "plain.test")
	allow = append(allow, rules(t, "test server", tlsAddr.String(), plainAddr.String())...)
	p, addr = start(t, Config{
		Allow: allow,
		Resolve: table(map[string]netip.AddrPort{
			"registry.test": tlsAddr, "evil.test": tlsAddr, "plain.test": plainAddr,
		}),
	})
	return p, addr, getCA(t).file(t)
}

func TestCurl(t *testing.T) {
	t.Parallel()
	p, addr, caFile := curlSetup(t)
	proxyURL := "http://" + addr
	for _, tc := range []struct {
		name   string
		env    []string
		args   []string
		ok     bool
		stdout string // the whole of stdout
		stderr string // in stderr
	}{
		{"HTTPS through HTTPS_PROXY", []string{"HTTPS_PROXY=" + proxyURL}, []string{"https://registry.test/left-pad"},
			true, "registry ok /left-pad", ""},
		{"HTTPS refused", []string{"HTTPS_PROXY=" + proxyURL}, []string{"-v", "https://evil.test/"},
			false, "", "< HTTP/1.1 403 sluice: evil.test:443 refused: not in this run's hosts"},
		{"plain HTTP through http_proxy", []string{"http_proxy=" + proxyURL}, []string{"http://plain.test/a"},
			true, "plain /a", ""},
		{"plain HTTP refused", []string{"http_proxy=" + proxyURL}, []string{"http://evil.test/"},
			false, "sluice: evil.test:80 refused: not in this run's hosts\n", "403"},
		{"SOCKS5 through ALL_PROXY", []string{"ALL_PROXY=socks5h://" + addr}, []string{"https://registry.test/s"},
			true, "registry ok /s", ""},
		{"SOCKS5 refused", []string{"ALL_PROXY=socks5h://" + addr}, []string{"https://evil.test/"},
			false, "", "SOCKS5 connection to evil.test. (2)"}, // 2: not allowed by ruleset
		{"IP literal of the host's loopback", []string{"HTTPS_PROXY=" + proxyURL}, []string{"-v", "https://127.0.0.2:9/"},
			false, "", "403 sluice: 127.0.0.2:9 refused: 127.0.0.2 is a host service (loopback)"},
		{"IPv6 literal", []string{"HTTPS_PROXY=" + proxyURL}, []string{"-v", "https://[::1]:9/"},
			false, "", "403 sluice: [::1]:9 refused: ::1 is a host service (loopback)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"-sS", "--fail-with-body", "--max-time", "30", "--cacert", caFile}, tc.args...)
			code, stdout, stderr := tool(t, tc.env, "curl", args...)
			if (code == 0) != tc.ok || stdout != tc.stdout || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("curl %s: exit %d\nstdout %q\nstderr %s", strings.Join(tc.args, " "), code, stdout, stderr)
			}
		})
	}
	t.Cleanup(func() {
		// Every attempt is recorded: two refusals of evil.test by
		// CONNECT and SOCKS (one entry), one by plain HTTP.
		_ = p.Close()
		if got := contactsOf(p, "evil.test", 443); len(got) != 1 || got[0].AllowedBy != "refused: not in this run's hosts" {
			t.Errorf("evil.test:443 %+v", p.Contacts())
		}
		if got := contactsOf(p, "registry.test", 443); len(got) != 1 || got[0].Received == 0 {
			t.Errorf("registry.test:443 %+v", p.Contacts())
		}
	})
}

// openssl s_client through the proxy naming another server in its
// ClientHello is cut off; naming the CONNECT host it gets through.
func TestOpenSSLServerName(t *testing.T) {
	t.Parallel()
	p, addr, caFile := curlSetup(t)
	for _, tc := range []struct {
		servername string
		ok         bool
	}{
		{"evil.test", false},
		{"registry.test", true},
	} {
		code, stdout, stderr := tool(t, nil, "openssl", "s_client", "-proxy", addr, "-connect", "registry.test:443",
			"-servername", tc.servername, "-CAfile", caFile, "-verify_return_error", "-brief")
		if (code == 0) != tc.ok {
			t.Fatalf("-servername %s: exit %d\n%s\n%s", tc.servername, code, stdout, stderr)
		}
	}
	_ = p.Close()
	want := "refused: its TLS ClientHello names evil.test, another server"
	if got := contactsOf(p, "registry.test", 443); len(got) != 2 || got[0].AllowedBy != want || got[1].AllowedBy != "knowledge: npm" {
		t.Fatalf("contacts %+v", p.Contacts())
	}
}
