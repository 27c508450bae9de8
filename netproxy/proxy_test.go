package netproxy

import (
	"crypto/tls"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestConnectAllowedByVerdict(t *testing.T) {
	t.Parallel()
	srv := tlsServer(t, "registry ok", "registry.test")
	local := addrOf(t, srv)
	allow := rules(t, "knowledge: npm", "registry.test")
	allow = append(allow, rules(t, "test server", local.String())...)
	p, addr := start(t, Config{
		Allow:   allow,
		Resolve: table(map[string]netip.AddrPort{"registry.test": local}),
	})
	c := tunnel(t, addr, "registry.test:443")
	body, err := httpsGet(t, c, "registry.test", "/left-pad")
	if err != nil {
		t.Fatal(err)
	}
	if body != "registry ok /left-pad" {
		t.Fatalf("body %q", body)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	got := p.Contacts()
	if len(got) != 1 {
		t.Fatalf("contacts %+v, want one", got)
	}
	if c := got[0]; c.Host != "registry.test" || c.Port != 443 || c.AllowedBy != "knowledge: npm" || c.Sent == 0 || c.Received == 0 {
		t.Fatalf("contact %+v", c)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	public := netip.MustParseAddrPort("93.184.216.34:443")
	resolve := table(map[string]netip.AddrPort{
		"registry.test": public,
		"rebind.test":   netip.MustParseAddrPort("127.0.0.1:443"),
		"meta.test":     netip.MustParseAddrPort("169.254.169.254:80"),
		"docker.test":   netip.MustParseAddrPort("93.184.216.40:2375"),
	})
	for _, tc := range []struct {
		name, allow, deny, target string
		want                      string // the refusal's reason, after "refused: "
	}{
		{"not in the set", "registry.test", "", "registry.evil.example:443", "not in this run's hosts"},
		{"deny wins", "*.example.test", "bad.example.test", "bad.example.test:443", "denied by rule bad.example.test"},
		{"deny by port", "registry.test", "registry.test:80", "registry.test:80", "denied by rule registry.test:80"},
		{"wildcard is not the apex", "*.example.test", "", "example.test:443", "not in this run's hosts"},
		{"port rule", "registry.test:443", "", "registry.test:80", "not in this run's hosts"},
		{"DNS rebinding", "rebind.test", "", "rebind.test:443", "it resolves to 127.0.0.1, which is a host service (loopback)"},
		{"name to metadata", "meta.test", "", "meta.test:80", "it resolves to 169.254.169.254, which is a host service (link-local)"},
		{"deny range on the resolved address", "registry.test", "93.184.216.0/24", "registry.test:443", "it resolves to 93.184.216.34, which is denied by rule 93.184.216.0/24"},
		{"metadata literal", "registry.test", "", "169.254.169.254:80", "169.254.169.254 is a host service (link-local)"},
		{"loopback literal", "registry.test", "", "127.0.0.1:8080", "127.0.0.1 is a host service (loopback)"},
		{"this host", "registry.test", "", "0.0.0.0:8080", "0.0.0.0 is a host service (this host)"},
		{"private literal", "registry.test", "", "10.1.2.3:443", "10.1.2.3 is a host service (private)"},
		{"private 172", "registry.test", "", "172.20.0.1:443", "172.20.0.1 is a host service (private)"},
		{"CGNAT", "registry.test", "", "100.100.1.1:443", "100.100.1.1 is a host service (shared address space)"},
		{"IPv6 loopback", "registry.test", "", "[::1]:443", "::1 is a host service (loopback)"},
		{"IPv6 link-local", "registry.test", "", "[fe80::1]:443", "fe80::1 is a host service (link-local)"},
		{"IPv6 private", "registry.test", "", "[fd00::1]:443", "fd00::1 is a host service (private)"},
		{"IPv4-mapped loopback", "registry.test", "", "[::ffff:127.0.0.1]:443", "127.0.0.1 is a host service (loopback)"},
		{"neighbour literal", "registry.test", "", "93.184.216.35:443", "not in this run's hosts"},
		{"the name's own address", "registry.test", "", "93.184.216.34:443", "not in this run's hosts"},
		{"public IPv6 literal", "registry.test", "", "[2606:2800:220:1::1]:443", "not in this run's hosts"},
		{"docker port", "docker.test", "", "docker.test:2375", "port 2375 is the docker API (a rule must name the port)"},
		{"docker TLS port", "93.184.216.40", "", "93.184.216.40:2376", "port 2376 is the docker API (a rule must name the port)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Allow: rules(t, "verdict", tc.allow), Resolve: resolve}
			if tc.deny != "" {
				cfg.Deny = rules(t, "network_deny", tc.deny)
			}
			p, addr := start(t, cfg)
			status, c := connect(t, addr, tc.target)
			if c != nil {
				_ = c.Close()
				t.Fatalf("CONNECT %s allowed: %s", tc.target, status)
			}
			tgt, err := parseTarget(tc.target, 0)
			if err != nil {
				t.Fatal(err)
			}
			line := "sluice: " + tgt.String() + " refused: " + tc.want
			if status != "403 "+line+"|"+line {
				t.Fatalf("got  %q\nwant %q", status, "403 "+line+"|"+line)
			}
			got := contactsOf(p, tgt.host, tgt.port)
			if len(got) != 1 || got[0].AllowedBy != "refused: "+tc.want || got[0].Sent != 0 || got[0].Received != 0 {
				t.Fatalf("contacts %+v", p.Contacts())
			}
		})
	}
}

// A host service is reachable when a rule names its address: a test's
// local registry, or a person's own network_allow = ["127.0.0.1:5432"].
func TestHostServiceAllowedByAddressRule(t *testing.T) {
	t.Parallel()
	srv := tlsServer(t, "local ok", "registry.test", "127.0.0.1")
	local := addrOf(t, srv)
	resolve := table(map[string]netip.AddrPort{"registry.test": local})
	for _, tc := range []struct {
		name   string
		allow  []string
		target string
		sni    string
	}{
		{"name and address", []string{"registry.test", local.String()}, "registry.test:443", "registry.test"},
		{"address only", []string{local.String()}, local.String(), "127.0.0.1"},
		{"range", []string{"127.0.0.0/8"}, local.String(), "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, addr := start(t, Config{Allow: rules(t, "network_allow", tc.allow...), Resolve: resolve})
			c := tunnel(t, addr, tc.target)
			body, err := httpsGet(t, c, tc.sni, "/")
			if err != nil || body != "local ok /" {
				t.Fatalf("body %q, %v", body, err)
			}
		})
	}
	// The address rule admits the address, not a port beside it.
	_, addr := start(t, Config{Allow: rules(t, "network_allow", local.String())})
	other := netip.AddrPortFrom(local.Addr(), local.Port()+1)
	if status, c := connect(t, addr, other.String()); c != nil || !strings.Contains(status, "host service (loopback)") {
		t.Fatalf("neighbouring port: %s", status)
	}
}

func TestAddressRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		allow, target string
		ok            bool
	}{
		{"0.0.0.0/0", "93.184.216.34:443", true},
		{"0.0.0.0/0", "127.0.0.1:8080", false},
		{"0.0.0.0/0", "169.254.169.254:80", false},
		{"::/0", "[::1]:443", false},
		{"::/0", "[2606:2800:220:1::1]:443", true},
		{"127.0.0.0/8", "127.0.0.1:8080", true},
		{"127.0.0.1", "127.0.0.2:8080", false},
		{"10.1.0.0/16", "10.1.2.3:5432", true},
		{"10.0.0.0/7", "10.1.2.3:5432", false},
		{"10.0.0.0/8:5432", "10.1.2.3:5432", true},
		{"10.0.0.0/8:5432", "10.1.2.3:5433", false},
		{"[fe80::/10]:22", "[fe80::1]:22", true},
		{"::ffff:127.0.0.1", "127.0.0.1:1", true},
		{"127.0.0.1", "[::ffff:127.0.0.1]:1", true},
	} {
		p, err := New(Config{Allow: rules(t, "r", tc.allow)})
		if err != nil {
			t.Fatal(err)
		}
		tgt, err := parseTarget(tc.target, 0)
		if err != nil {
			t.Fatal(err)
		}
		if v := p.decide(t.Context(), tgt); (v.refused == "") != tc.ok {
			t.Errorf("allow %s, %s: %+v", tc.allow, tc.target, v)
		}
		_ = p.Close()
	}
}

func TestDockerPortNeedsARuleNamingIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		allow string
		ok    bool
	}{
		{"93.184.216.40", false},
		{"93.184.216.0/24", false},
		{"93.184.216.40:2375", true},
	} {
		p, err := New(Config{Allow: rules(t, "r", tc.allow)})
		if err != nil {
			t.Fatal(err)
		}
		tgt, _ := parseTarget("93.184.216.40:2375", 0)
		v := p.decide(t.Context(), tgt)
		if (v.refused == "") != tc.ok {
			t.Errorf("allow %s: %+v", tc.allow, v)
		}
		_ = p.Close()
	}
}

func TestSNI(t *testing.T) {
	t.Parallel()
	srv := tlsServer(t, "ok", "registry.test", "other.test")
	local := addrOf(t, srv)
	p, addr := start(t, Config{
		Allow:   rules(t, "verdict", "registry.test", "other.test", local.String()),
		Resolve: table(map[string]netip.AddrPort{"registry.test": local, "other.test": local}),
	})

	// Both names are allowed, but a tunnel to one may not carry a
	// handshake with the other (domain fronting).
	c := tunnel(t, addr, "registry.test:443")
	if _, err := httpsGet(t, c, "other.test", "/"); err == nil {
		t.Fatal("a ClientHello naming other.test went through a tunnel to registry.test")
	}

	// Without SNI the CONNECT host decides.
	c = tunnel(t, addr, "registry.test:443")
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // no SNI is the point
	if err := tc.Handshake(); err != nil {
		t.Fatalf("no SNI: %v", err)
	}
	_ = tc.Close()

	// SNI in another case and with a trailing dot is the same server.
	c = tunnel(t, addr, "registry.test:443")
	if _, err := httpsGet(t, c, "Registry.Test", "/"); err != nil {
		t.Fatalf("SNI in capitals: %v", err)
	}

	// A non-TLS protocol in a tunnel is the CONNECT host's business.
	c = tunnel(t, addr, "registry.test:443")
	_, _ = c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	buf := make([]byte, 64)
	n, _ := c.Read(buf)
	_ = c.Close()
	if !strings.HasPrefix(string(buf[:n]), "HTTP/1.0 400") {
		t.Fatalf("plain bytes in a tunnel: %q", buf[:n])
	}

	_ = p.Close()
	var refused, allowed int
	for _, c := range p.Contacts() {
		switch c.AllowedBy {
		case "refused: its TLS ClientHello names other.test, another server":
			refused++
			if c.Host != "registry.test" || c.Sent != 0 {
				t.Errorf("refused contact %+v", c)
			}
		case "verdict":
			allowed++
		default:
			t.Errorf("contact %+v", c)
		}
	}
	if refused != 1 || allowed != 1 {
		t.Fatalf("contacts %+v", p.Contacts())
	}
}

func TestMalformedHelloIsRefused(t *testing.T) {
	t.Parallel()
	p, addr := start(t, registryConfig(t, "ok"))
	c := tunnel(t, addr, "registry.test:443")
	// A handshake record that is not a ClientHello.
	_, _ = c.Write([]byte{22, 3, 1, 0, 4, 2, 0, 0, 0})
	buf := make([]byte, 16)
	if _, err := c.Read(buf); err == nil {
		t.Fatal("the tunnel stayed open")
	}
	_ = c.Close()
	_ = p.Close()
	if got := contactsOf(p, "registry.test", 443); len(got) != 1 || got[0].AllowedBy != "refused: its TLS ClientHello is malformed" {
		t.Fatalf("contacts %+v", got)
	}
}

func TestTargetPorts(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"a.test:0", "a.test:65536", "a.test", "a.test:", "[::1]", "::1:443", "[a.test]:443", "127.1:80", "0x7f000001:80", "a..test:1", "-:x"} {
		if tgt, err := parseTarget(s, 0); err == nil {
			t.Errorf("parseTarget(%q) = %+v", s, tgt)
		}
	}
	for s, want := range map[string]string{
		"A.Test.:443":                     "a.test:443",
		"[::ffff:10.0.0.1]:1":             "10.0.0.1:1",
		"[2001:DB8::1]:" + "8080":         "[2001:db8::1]:8080",
		"x_y.test:" + strconv.Itoa(65535): "x_y.test:65535",
	} {
		tgt, err := parseTarget(s, 0)
		if err != nil || tgt.String() != want {
			t.Errorf("parseTarget(%q) = %v, %v; want %s", s, tgt, err, want)
		}
	}
}

// A tunnel is listed as soon as it is let through (a console shows it
// while the run goes on); its bytes are counted in when it ends.
func TestContactListedWhileOpen(t *testing.T) {
	t.Parallel()
	p, addr := start(t, registryConfig(t, "ok"))
	c := tunnel(t, addr, "registry.test:443")
	tc := tls.Client(c, &tls.Config{ServerName: "registry.test", RootCAs: getCA(t).pool})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	if got := p.Contacts(); len(got) != 1 || got[0] != (Contact{Host: "registry.test", Port: 443, AllowedBy: "verdict"}) {
		t.Fatalf("contacts while open %+v", got)
	}
	_ = tc.Close()
	_ = p.Close()
	if got := p.Contacts(); len(got) != 1 || got[0].Sent == 0 || got[0].Received == 0 {
		t.Fatalf("contacts after %+v", got)
	}
}

// In production the proxy serves a unix socket that is bridged into the
// run's network namespace.
func TestUnixListener(t *testing.T) {
	t.Parallel()
	p, err := New(registryConfig(t, "over unix"))
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(l) }()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	openTunnel(t, c, "registry.test:443")
	body, err := httpsGet(t, c, "registry.test", "/u")
	if err != nil || body != "over unix /u" {
		t.Fatalf("%q %v", body, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if got := p.Contacts(); len(got) != 1 || got[0].Received == 0 {
		t.Fatalf("%+v", got)
	}
}
