package web

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	osexec "os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/hub"
	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/web/devices"
)

// Help is what 'sluice web --help' says.
const Help = `The web approver: the box's queue on a phone or laptop browser, with
approve and deny as safe as the console's (the whole request on screen and
a grace period first; the server takes an approval only with the digest of
what it showed that device, and the box's own 'sluice approve --digest --as'
carries it out, confined and audited as "PERSON@DEVICE (via web)").

  sluice web [--listen ADDR] [flags]   serve the page (default 127.0.0.1:8787)
  sluice web --hub URL [flags]         serve every box of the fleet, through the hub
  sluice web pair NAME                 print a pairing code (and a QR code)
  sluice web devices                   list the paired devices
  sluice web revoke NAME               unpair a device (effective within a second)

It listens on loopback only, unless given --tls-cert and --tls-key. Reach it
from elsewhere through 'ssh -L', 'tailscale serve' or a TLS reverse proxy in
front of the loopback address, and pass that address as --url (web_url):
links in notifications and the QR code use it.`

// Main is the whole sluice-web program. roots gives the directories a
// file request may change (policy.Roots), for its diff.
func Main(args []string, stdout, stderr io.Writer, roots func(cwd string) []string) int {
	if len(args) > 0 && args[0] == "web" { // 'sluice web' passes its own name first
		args = args[1:]
	}
	// Flags may come before the command (sluice's exec stub puts --spool
	// and config.toml's --url there) and after it.
	fs := flag.NewFlagSet("sluice web", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	c := cli{stdout: stdout, stderr: stderr}
	fs.StringVar(&c.spool, "spool", "", "spool `DIR` (env SLUICE_SPOOL; default: the user's)")
	fs.StringVar(&c.audit, "audit", "", "the audit log `FILE` (default: the one the spool's engine published, else env SLUICE_AUDIT, else sluice's default)")
	fs.StringVar(&c.state, "state", "", "the web approver's state `DIR` (devices, pairing code; default $XDG_STATE_HOME/sluice/web)")
	fs.StringVar(&c.url, "url", "", "the address people open (config web_url), for links and the pairing QR code")
	var f serveFlags
	fs.StringVar(&f.hubURL, "hub", "", "serve: every box of the fleet, from the hub at `URL` (nats://HOST:PORT; \"-\" for the one the credentials name), deciding as its console")
	fs.StringVar(&f.hubCreds, "hub-creds", "", "serve: the console's credentials `FILE` for --hub (default ~/.config/sluice/hub.creds, as 'sluice hub' uses)")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8787", "serve: listen on `ADDR`; beyond loopback only with --tls-cert and --tls-key")
	fs.StringVar(&f.cert, "tls-cert", "", "serve: TLS with this certificate `FILE` (from your own CA)")
	fs.StringVar(&f.key, "tls-key", "", "serve: the certificate's key `FILE`")
	fs.StringVar(&f.notifyURL, "notify-url", "", "serve: POST an ntfy-compatible notification to `URL` when a request starts waiting (config notify_url)")
	fs.IntVar(&f.perMin, "notify-per-min", 6, "serve: at most `N` notifications a minute")
	fs.DurationVar(&f.grace, "grace", DefaultGrace, "serve: take an approval only for a request shown to the device at least `DUR` before")
	fs.DurationVar(&f.ttl, "session-ttl", DefaultSessionTTL, "serve: a paired device stays paired this `long`")
	fs.BoolVar(&f.passkey, "require-passkey", false, "serve: approving a destructive run needs a user-verified passkey of the device (config web_require_passkey; needs https or localhost)")
	sub := "serve"
	err := fs.Parse(args)
	before := map[string]bool{} // flags before the command: config.toml's may be for serving
	fs.Visit(func(fl *flag.Flag) { before[fl.Name] = true })
	if err == nil && fs.NArg() > 0 && slices.Contains([]string{"serve", "pair", "devices", "revoke"}, fs.Arg(0)) {
		sub = fs.Arg(0)
		err = fs.Parse(fs.Args()[1:])
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "%s\n\nFlags (those marked serve: only when serving):\n", Help)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		fmt.Fprintln(stderr, "Run 'sluice web --help' for usage.")
		return 2
	}
	if sub != "serve" {
		var serveOnly []string
		fs.Visit(func(fl *flag.Flag) {
			if strings.HasPrefix(fl.Usage, "serve: ") && !before[fl.Name] {
				serveOnly = append(serveOnly, "--"+fl.Name)
			}
		})
		if len(serveOnly) > 0 {
			return c.usage("%s: only when serving, not with %s", strings.Join(serveOnly, ", "), sub)
		}
	}
	switch sub {
	case "serve":
		if fs.NArg() > 0 {
			return c.usage("unknown command %q: want pair, devices, revoke, or flags to serve", fs.Arg(0))
		}
		if (f.cert == "") != (f.key == "") {
			return c.usage("--tls-cert and --tls-key go together")
		}
		if f.grace < 200*time.Millisecond || f.grace > time.Minute {
			return c.usage("--grace %s: must be between 200ms and 1m", f.grace)
		}
		if f.hubCreds != "" && f.hubURL == "" {
			return c.usage("--hub-creds goes with --hub URL (or --hub - for the credentials' own hub)")
		}
		if f.ttl < time.Minute {
			return c.usage("--session-ttl %s: must be at least 1m", f.ttl)
		}
		return c.serve(f, roots)
	case "pair":
		if fs.NArg() != 1 {
			return c.usage("give the device a name: sluice web pair NAME (say phone or laptop)")
		}
		return c.pair(fs.Arg(0))
	case "devices":
		if fs.NArg() > 0 {
			return c.usage("devices takes no arguments")
		}
		return c.devices()
	case "revoke":
		if fs.NArg() != 1 {
			return c.usage("give the device's name: sluice web revoke NAME (see 'sluice web devices')")
		}
		return c.revoke(fs.Arg(0))
	}
	return c.usage("unknown command %q", sub)
}

type cli struct {
	stdout, stderr           io.Writer
	spool, audit, state, url string
}

func (c *cli) usage(format string, args ...any) int {
	fmt.Fprintf(c.stderr, "sluice web: %s\nRun 'sluice web --help' for usage.\n", fmt.Sprintf(format, args...))
	return 2
}

func (c *cli) fail(err error) int {
	fmt.Fprintf(c.stderr, "sluice web: %v\n", err)
	return 1
}

func (c *cli) openStore() (*Store, error) {
	dir := c.state
	if dir == "" {
		d, err := devices.DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	return OpenStore(dir)
}

func (c *cli) openSpool() (*queue.Spool, error) {
	dir, err := queue.DirFrom(c.spool)
	if err != nil {
		return nil, err
	}
	return queue.Open(dir)
}

// auditPath is the audit log: --audit, else the one the spool's engine
// published, else $SLUICE_AUDIT, else sluice's default.
func (c *cli) auditPath(sp *queue.Spool) (string, error) {
	if c.audit != "" {
		return filepath.Abs(c.audit)
	}
	if sp != nil {
		if p := sp.AuditPath(); p != "" {
			return p, nil
		}
	}
	if p := os.Getenv("SLUICE_AUDIT"); p != "" {
		return filepath.Abs(p)
	}
	return audit.DefaultPath()
}

// record appends one event to the audit log at path.
func record(path string) func(queue.Event) error {
	return func(ev queue.Event) error {
		l, err := audit.Open(path)
		if err != nil {
			return err
		}
		defer l.Close()
		return l.Record(ev)
	}
}

// recorder is record as a queue.Recorder.
type recorder string

// Record implements queue.Recorder.
func (r recorder) Record(ev queue.Event) error { return record(string(r))(ev) }

// sluiceBeside is the sluice program next to this one, else on $PATH.
func sluiceBeside() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "sluice")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := osexec.LookPath("sluice")
	if err != nil {
		return "", errors.New("sluice is neither next to sluice-web nor on $PATH; install both from one build ('make build' puts them in bin/)")
	}
	return filepath.Abs(p)
}

// serveFlags are the flags of 'sluice web' itself.
type serveFlags struct {
	listen, cert, key, notifyURL string
	hubURL, hubCreds             string
	perMin                       int
	grace, ttl                   time.Duration
	passkey                      bool
}

// relyingParty is the WebAuthn relying party the page is: the host of
// --url, else localhost for a loopback listener (a browser takes passkeys
// only in a secure context, and never for an IP address). "" when there
// is none.
func relyingParty(pageURL, listen string, tls, loopback bool) (string, []string) {
	if u, err := url.Parse(pageURL); err == nil && u.Hostname() != "" && (u.Scheme == "https" || u.Hostname() == "localhost") {
		return u.Hostname(), []string{u.Scheme + "://" + u.Host}
	}
	if !loopback {
		return "", nil
	}
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", nil
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return "localhost", []string{scheme + "://localhost:" + port}
}

func (c *cli) serve(f serveFlags, roots func(string) []string) int {
	listen, cert, key := f.listen, f.cert, f.key
	loopback, err := CheckListen(listen, cert != "")
	if err != nil {
		return c.usage("%v", err)
	}
	store, err := c.openStore()
	if err != nil {
		return c.fail(err)
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(c.stderr, "sluice web: %s\n", Plain(fmt.Sprintf(format, args...), 2000))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var src interface {
		Source
		Run(context.Context) error
	}
	var auditFile, what string
	if f.hubURL != "" {
		// The fleet: the audit log here records pairings only; the
		// decisions are in each box's.
		if auditFile, err = c.auditPath(nil); err != nil {
			return c.fail(err)
		}
		h, err := c.connectHub(ctx, f, logf)
		if err != nil {
			return c.fail(err)
		}
		defer h.Close()
		src, what = h, "the fleet through the hub as console "+h.cl.Creds.Name
	} else {
		sp, err := c.openSpool()
		if err != nil {
			return c.fail(err)
		}
		if auditFile, err = c.auditPath(sp); err != nil {
			return c.fail(err)
		}
		sluice, err := sluiceBeside()
		if err != nil {
			return c.fail(err)
		}
		src, what = spoolRunner{NewSpool(sp, SpoolOptions{Sluice: sluice, Audit: auditFile, Roots: roots, Logf: logf})}, sp.Dir()
	}
	rpID, origins := relyingParty(c.url, listen, cert != "", loopback)
	srv, err := NewServer(src, store, Options{Person: audit.Login(), Grace: f.grace, SessionTTL: f.ttl,
		Secure: cert != "" || strings.HasPrefix(c.url, "https://"), URL: c.url, Loopback: loopback && cert == "",
		RequirePasskey: f.passkey, RPID: rpID, RPOrigins: origins,
		Record: record(auditFile), Logf: logf})
	if err != nil {
		return c.usage("%v", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return c.fail(err)
	}
	go func() {
		if err := src.Run(ctx); err != nil {
			logf("%v", err)
		}
	}()
	if f.notifyURL != "" {
		n := &Notifier{URL: f.notifyURL, Link: c.url, PerMinute: f.perMin, Logf: logf}
		go n.Run(ctx, src)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	scheme := "http"
	if cert != "" {
		scheme = "https"
	}
	fmt.Fprintf(c.stderr, "sluice web: serving %s on %s://%s (audit log %s); pair a device with 'sluice web pair NAME'\n",
		what, scheme, ln.Addr(), auditFile)
	errc := make(chan error, 1)
	go func() {
		if cert != "" {
			errc <- hs.ServeTLS(ln, cert, key)
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return c.fail(err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx) // streams end here; runs go on (their own sluice approve)
	return 0
}

func (c *cli) pair(name string) int {
	store, err := c.openStore()
	if err != nil {
		return c.fail(err)
	}
	code, err := store.NewCode(name, audit.Login(), time.Now())
	if err != nil {
		return c.fail(err)
	}
	base := c.url
	if base == "" {
		base = "http://localhost:8787"
	}
	link := strings.TrimRight(base, "/") + "/#pair=" + code
	if q, err := QR(link); err == nil {
		fmt.Fprint(c.stdout, q)
	}
	fmt.Fprintf(c.stdout, "\nPairing code for %q: %s-%s\n", name, code[:5], code[5:])
	fmt.Fprintf(c.stdout, "Open %s on the device (or scan the code above) and enter it there.\n", base)
	fmt.Fprintf(c.stdout, "Good once, for %s and %d tries; a new 'sluice web pair' replaces it.\n", CodeTTL, CodeTries)
	return 0
}

func (c *cli) devices() int {
	store, err := c.openStore()
	if err != nil {
		return c.fail(err)
	}
	devs, err := store.Devices()
	if err != nil {
		return c.fail(err)
	}
	if len(devs) == 0 {
		fmt.Fprintf(c.stderr, "no paired devices in %s; pair one with 'sluice web pair NAME'\n", store.Dir())
		return 0
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPAIRED\tLAST SEEN\tEXPIRES\tBY\tBROWSER")
	now := time.Now()
	for _, d := range devs {
		exp := d.ExpiresAt.Local().Format(time.DateTime)
		if !now.Before(d.ExpiresAt) {
			exp = "expired"
		}
		seen := "-"
		if !d.LastSeen.IsZero() {
			seen = d.LastSeen.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.Name, d.PairedAt.Local().Format(time.DateTime), seen, exp,
			Plain(d.By, 32), Plain(d.UserAgent, 60))
	}
	tw.Flush()
	return 0
}

func (c *cli) revoke(name string) int {
	store, err := c.openStore()
	if err != nil {
		return c.fail(err)
	}
	var sp *queue.Spool
	if s, err := c.openSpool(); err == nil {
		sp = s
	}
	path, err := c.auditPath(sp)
	if err != nil {
		return c.fail(err)
	}
	if _, err := store.RevokeAs(name, audit.Login(), recorder(path)); err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(c.stdout, "revoked %s; its open pages lose access within a second\n", name)
	return 0
}

// spoolRunner is a Spool with the Run the server expects of a source.
type spoolRunner struct{ *Spool }

func (s spoolRunner) Run(ctx context.Context) error { s.Spool.Run(ctx); return nil }

// connectHub connects to the hub of --hub with the console's credentials
// of --hub-creds.
func (c *cli) connectHub(ctx context.Context, f serveFlags, logf func(string, ...any)) (*Hub, error) {
	path := f.hubCreds
	if path == "" {
		path = hub.DefaultCreds()
	}
	creds, err := hub.ReadCreds(path)
	if err != nil {
		return nil, err // it says how to make them
	}
	url := f.hubURL
	if url == "-" {
		url = ""
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return ConnectHub(cctx, url, creds, HubOptions{Logf: logf})
}
