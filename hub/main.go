package hub

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

const usage = `sluice hub: one place to decide from for sluice on many machines (NATS JetStream).

On the hub machine:
  sluice hub [serve] [--listen ADDR] [--store DIR] run the hub (embedded NATS, TLS, JetStream)
  sluice hub add-box NAME [--url nats://HOST:PORT] issue a box's credentials
  sluice hub add-console NAME [--url ...]          issue a console's credentials
  sluice hub users | remove NAME                   who the hub admits; stop admitting one
  sluice hub config [--listen ADDR] > hub.conf     a nats-server configuration serving the same store
  sluice hub init --hub URL                        then, once, the buckets on that server
  sluice hub service --hub URL                     and, beside it, the hub's decision service (the
                                                   embedded hub runs its own)

On a box (beside its 'sluice serve' or console; 'sluice serve --hub' starts it):
  sluice hub box [--hub URL] [--hub-creds FILE]    publish what waits for a person; apply decisions

From anywhere with console credentials:
  sluice hub ls [--box NAME]                       what waits on every box
  sluice hub approve BOX/ID | deny BOX/ID [--reason TEXT]
                                                   decide; the first decision for a request wins
                                                   (ID: the whole id, a unique prefix of 4+
                                                   characters, or the last 8+ as consoles show it)

The console's screen over the hub ('sluice console --hub URL') runs
  sluice hub feed [--hub URL] [--hub-creds FILE]   the fleet as JSON lines; decisions read from stdin

Files: the hub's store is $XDG_STATE_HOME/sluice/hub (--store); credentials
default to $XDG_CONFIG_HOME/sluice/hub.creds (--hub-creds), written by
add-box and add-console (copy them to the box or console, mode 600).

Exit status: 0 done; 1 failed (no hub, refused, already decided); 2 usage.
`

// Main is sluice-hub's command line. roots is Box.Roots for 'box'
// (cmd/sluice-hub passes policy.Roots).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, roots func(cwd string) []string) int {
	if len(args) > 0 && args[0] == "hub" {
		args = args[1:]
	}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		// 'sluice hub [--listen ADDR] [--store DIR]' runs the hub.
		args = append([]string{"serve"}, args...)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return cmdServe(rest, stdout, stderr)
	case "add-box":
		return cmdAdd(RoleBox, rest, stdout, stderr)
	case "add-console":
		return cmdAdd(RoleConsole, rest, stdout, stderr)
	case "users":
		return cmdUsers(rest, stdout, stderr)
	case "remove":
		return cmdRemove(rest, stdout, stderr)
	case "config":
		return cmdConfig(rest, stdout, stderr)
	case "init":
		return cmdInit(rest, stdout, stderr)
	case "service":
		return cmdService(rest, stdout, stderr)
	case "box":
		return cmdBox(rest, stdout, stderr, roots)
	case "ls":
		return cmdLs(rest, stdout, stderr)
	case "feed":
		return cmdFeed(rest, stdin, stdout, stderr)
	case "approve":
		return cmdDecide(Approve, rest, stdin, stdout, stderr)
	case "deny":
		return cmdDecide(Deny, rest, stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "sluice hub: unknown command %q; see 'sluice hub --help'\n", cmd)
	return exitUsage
}

// flags is a subcommand's flag set: errors go to stderr, --help to stdout.
func flags(name, args, help string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sluice hub "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "usage: sluice hub %s %s\n\n%s\n", name, args, help)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(stderr)
	}
	return fs
}

// failed says why the command cmd failed, and is its exit code.
func failed(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "sluice hub %s: %v\n", cmd, err)
	return exitFail
}

// parseNone parses the args of a command that takes no positional
// arguments.
func parseNone(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	pos, code, ok := parse(fs, args)
	if ok && len(pos) > 0 {
		fmt.Fprintf(stderr, "%s: takes no arguments (%q); see 'sluice hub --help'\n", fs.Name(), pos[0])
		return exitUsage, false
	}
	return code, ok
}

// parse parses args, allowing flags after the positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, int, bool) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, 0, true
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), 0, true
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

func stateHome() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state")
}

func configHome() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config")
}

func defaultStore() string { return filepath.Join(stateHome(), "sluice", "hub") }

// DefaultCreds is where a box or console keeps its credentials.
func DefaultCreds() string { return filepath.Join(configHome(), "sluice", "hub.creds") }

func signalCtx() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

func cmdServe(args []string, stdout, stderr io.Writer) int {
	fs := flags("serve", "[--listen ADDR] [--store DIR]", "Run the hub: a NATS server with JetStream on disk, TLS only (its certificate is\nmade on first start; boxes and consoles pin its fingerprint), admitting the\nboxes and consoles add-box and add-console issued (added ones within a\nsecond, without a restart).", stdout, stderr)
	listen := fs.String("listen", ":4222", "`ADDR` to listen on (HOST:PORT)")
	storeDir := fs.String("store", defaultStore(), "the hub's `DIR`: certificate, users, streams")
	lim := limitFlags(fs)
	if code, ok := parseNone(fs, args, stderr); !ok {
		return code
	}
	if _, port, err := net.SplitHostPort(*listen); err != nil || port == "" {
		fmt.Fprintf(stderr, "sluice hub serve: --listen %q: want HOST:PORT or :PORT (:0 for a free port)\n", *listen)
		return exitUsage
	}
	st, err := Open(*storeDir)
	if err != nil {
		return failed(stderr, "serve", err)
	}
	h, err := StartHub(HubOptions{Listen: *listen, Store: st, Log: stderr, Limits: *lim})
	if err != nil {
		return failed(stderr, "serve", err)
	}
	fp, _ := st.Fingerprint()
	us, _ := st.Users()
	fmt.Fprintf(stderr, "sluice hub: listening on %s (TLS), store %s\n", h.Addr(), st.Dir)
	fmt.Fprintf(stderr, "sluice hub: certificate fingerprint (SHA-256) %s\n", fp)
	fmt.Fprintf(stderr, "sluice hub: %d boxes and consoles admitted; add one with 'sluice hub add-box NAME' or 'add-console NAME'\n", len(us))
	ctx, stop := signalCtx()
	defer stop()
	if err := h.Run(ctx); err != nil {
		return failed(stderr, "serve", err)
	}
	fmt.Fprintf(stderr, "sluice hub: stopped\n")
	return exitOK
}

func cmdAdd(role string, args []string, stdout, stderr io.Writer) int {
	name := "add-" + role
	fs := flags(name, "NAME [--url nats://HOST:PORT] [--store DIR]", "Issue credentials for a "+role+": an NKey the hub admits with a "+role+"'s permissions,\nwritten with the hub's fingerprint (and --url) to STORE/creds/NAME.creds. Copy\nthat file to the "+role+" as ~/.config/sluice/hub.creds (mode 600).", stdout, stderr)
	url := fs.String("url", "", "the hub's address as the "+role+" reaches it, written into the credentials")
	storeDir := fs.String("store", defaultStore(), "the hub's `DIR`")
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "sluice hub %s: give one NAME (lower-case letters, digits, '-')\n", name)
		return exitUsage
	}
	st, err := Open(*storeDir)
	if err != nil {
		return failed(stderr, name, err)
	}
	if *url != "" && !strings.Contains(*url, "://") {
		*url = "nats://" + *url
	}
	_, path, err := st.Add(pos[0], role, *url)
	if err != nil {
		return failed(stderr, name, err)
	}
	fmt.Fprintf(stdout, "%s %s added; its credentials: %s\n", role, pos[0], path)
	fmt.Fprintf(stdout, "copy them to the %s: scp %s HOST:.config/sluice/hub.creds (keep them secret: they admit it to the hub)\n", role, path)
	hubArg := "--hub nats://THIS-HOST:4222" // the box must be told where the hub is
	if *url != "" {
		hubArg = "--hub " + *url
	}
	if role == RoleBox {
		fmt.Fprintf(stdout, "then on the box: sluice serve %s (or, beside its console: sluice hub box %s)\n", hubArg, hubArg)
	} else {
		fmt.Fprintf(stdout, "then on the console's machine: sluice hub ls %s\n", hubArg)
	}
	return exitOK
}

func cmdUsers(args []string, stdout, stderr io.Writer) int {
	fs := flags("users", "[--store DIR]", "List the boxes and consoles the hub admits.", stdout, stderr)
	storeDir := fs.String("store", defaultStore(), "the hub's `DIR`")
	if _, code, ok := parse(fs, args); !ok {
		return code
	}
	st, err := Open(*storeDir)
	if err != nil {
		return failed(stderr, "users", err)
	}
	us, err := st.Users()
	if err != nil {
		return failed(stderr, "users", err)
	}
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tADDED\tNKEY")
	for _, u := range us {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Name, u.Role, u.Added.Local().Format(time.DateTime), u.NKey)
	}
	tw.Flush()
	return exitOK
}

func cmdRemove(args []string, stdout, stderr io.Writer) int {
	fs := flags("remove", "NAME [--store DIR]", "Stop admitting a box or console (a running hub drops it within a second).", stdout, stderr)
	storeDir := fs.String("store", defaultStore(), "the hub's `DIR`")
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "sluice hub remove: give one NAME\n")
		return exitUsage
	}
	st, err := Open(*storeDir)
	if err == nil {
		err = st.Remove(pos[0])
	}
	if err != nil {
		return failed(stderr, "remove", err)
	}
	fmt.Fprintf(stdout, "removed %s\n", pos[0])
	return exitOK
}

func cmdConfig(args []string, stdout, stderr io.Writer) int {
	fs := flags("config", "[--listen ADDR] [--store DIR]", "Print a nats-server configuration (JSON) that serves this store as the\nembedded hub does: its certificate, the boxes and consoles with their\npermissions, JetStream in the store. Users added later need the file made\nagain and the server reloaded (nats-server --signal reload). Then 'sluice hub\ninit' once, and 'sluice hub service' beside the server: it records the\ndecisions (the embedded hub runs its own).", stdout, stderr)
	listen := fs.String("listen", ":4222", "`ADDR` the server is to listen on")
	storeDir := fs.String("store", defaultStore(), "the hub's `DIR`")
	if _, code, ok := parse(fs, args); !ok {
		return code
	}
	st, err := Open(*storeDir)
	if err != nil {
		return failed(stderr, "config", err)
	}
	cfg, err := st.ServerConfig(*listen)
	if err != nil {
		return failed(stderr, "config", err)
	}
	stdout.Write(cfg)
	return exitOK
}

func cmdInit(args []string, stdout, stderr io.Writer) int {
	fs := flags("init", "--hub URL [--store DIR]", "Make the fleet's buckets on a nats-server started with 'sluice hub config'\n(the embedded hub makes them itself).", stdout, stderr)
	url := fs.String("hub", "nats://127.0.0.1:4222", "the server's `URL`")
	storeDir := fs.String("store", defaultStore(), "the hub's `DIR`")
	lim := limitFlags(fs)
	if _, code, ok := parse(fs, args); !ok {
		return code
	}
	st, err := Open(*storeDir)
	if err != nil {
		return failed(stderr, "init", err)
	}
	ctx, stop := signalCtx()
	defer stop()
	if err := st.Init(ctx, *url, *lim); err != nil {
		return failed(stderr, "init", err)
	}
	fmt.Fprintf(stdout, "buckets %s, %s, %s ready on %s; run 'sluice hub service --hub %s' beside it\n", BucketPending, BucketDecisions, BucketResults, *url, *url)
	return exitOK
}

// limitFlags are the pending bucket's bounds.
func limitFlags(fs *flag.FlagSet) *Limits {
	var l Limits
	fs.DurationVar(&l.MaxAge, "pending-max-age", DefaultMaxAge, "how long a request stays on the hub since its box published it (then it is decided on the box)")
	fs.IntVar(&l.PerBox, "pending-per-box", DefaultPerBox, "how many requests of one box the hub holds at once (the latest beyond are decided on the box)")
	return &l
}

func cmdService(args []string, stdout, stderr io.Writer) int {
	fs := flags("service", "--hub URL [--store DIR] [--pending-max-age D] [--pending-per-box N]", "Run the hub's own service beside a nats-server started with 'sluice hub config'\n(the embedded hub runs its own): it records the consoles' decisions, each\nby the console whose credentials sent it, and keeps the pending bucket within\nits bounds, telling the consoles what it took off. It connects as the store's\nadministrator, so run it on the hub's machine. Runs until interrupted; a\nserver that restarts is reconnected to.", stdout, stderr)
	url := fs.String("hub", "nats://127.0.0.1:4222", "the server's `URL`")
	storeDir := fs.String("store", defaultStore(), "the hub's `DIR`")
	lim := limitFlags(fs)
	if code, ok := parseNone(fs, args, stderr); !ok {
		return code
	}
	st, err := Open(*storeDir)
	if err != nil {
		return failed(stderr, "service", err)
	}
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s sluice hub service: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
	}
	ctx, stop := signalCtx()
	defer stop()
	nc, ok := connectRetrying(ctx, retry{what: "the server", reconnected: "reconnected", every: time.Second, logf: logf},
		func(opts ...nats.Option) (*nats.Conn, error) {
			return st.AdminConn(*url, append(opts, nats.Name("sluice hub service"))...)
		})
	if !ok {
		return exitOK
	}
	defer nc.Close()
	l := lim.withDefaults()
	svc := &Service{NC: nc, Limits: l, Logf: logf, Ready: func() {
		logf("serving %s: decisions on %s; a request stays at most %s, and %d a box", nc.ConnectedUrlRedacted(), DecideSubject("CONSOLE"), l.MaxAge, l.PerBox)
	}}
	if err := svc.Run(ctx); err != nil {
		return failed(stderr, "service", err)
	}
	return exitOK
}

// retry is how a long-running command (service, box) waits for its first
// connection and says what becomes of it: what it connects to, what it
// does while that is lost, and how long it waits between tries.
type retry struct {
	what, meanwhile, reconnected string
	every                        time.Duration
	logf                         func(format string, a ...any)
}

// connectRetrying calls connect, with options that retry a lost
// connection and log its loss and return, until it succeeds (true) or ctx
// ends (false).
func connectRetrying[C any](ctx context.Context, r retry, connect func(...nats.Option) (C, error)) (C, bool) {
	for {
		c, err := connect(nats.RetryOnFailedConnect(true),
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				if err != nil {
					r.logf("lost %s (%v); %sretrying", r.what, err, r.meanwhile)
				}
			}),
			nats.ReconnectHandler(func(*nats.Conn) { r.logf("%s", r.reconnected) }))
		if err == nil {
			return c, true
		}
		r.logf("%s cannot be reached (%v); retrying in %d s", r.what, err, r.every/time.Second)
		select {
		case <-ctx.Done():
			var none C
			return none, false
		case <-time.After(r.every):
		}
	}
}

// clientFlags are --hub and --hub-creds.
func clientFlags(fs *flag.FlagSet) (url, creds *string) {
	url = fs.String("hub", "", "the hub's `URL` (nats://HOST:PORT); default: the one in the credentials")
	creds = fs.String("hub-creds", DefaultCreds(), "the credentials `FILE` add-box or add-console wrote")
	return url, creds
}

func dial(ctx context.Context, url, credsPath string, opts ...nats.Option) (*Client, error) {
	c, err := ReadCreds(credsPath)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return Connect(cctx, url, c, opts...)
}

func cmdBox(args []string, stdout, stderr io.Writer, roots func(cwd string) []string) int {
	fs := flags("box", "[--hub URL] [--hub-creds FILE] [--spool DIR] [--audit FILE]", "Bridge this box to the hub: each request the box's engine leaves for a person\nis published with its verdict; a decision made at a console is applied here\nwith 'sluice approve --digest' or 'sluice deny' (the claim, the confinement and\nthe audit line are this box's, the person at the console named as actor).\nRuns until interrupted; a hub that is down is retried, and what waits is\npublished when it is back.", stdout, stderr)
	url, credsPath := clientFlags(fs)
	spoolDir := fs.String("spool", os.Getenv("SLUICE_SPOOL"), "the spool `DIR` (env SLUICE_SPOOL)")
	auditFile := fs.String("audit", os.Getenv("SLUICE_AUDIT"), "the audit log `FILE` the box's engine writes (env SLUICE_AUDIT)")
	if _, code, ok := parse(fs, args); !ok {
		return code
	}
	c, code := roleCreds("box", *credsPath, RoleBox, stderr)
	if c == nil {
		return code
	}
	var err error
	if *spoolDir == "" {
		if *spoolDir, err = queue.DefaultDir(); err != nil {
			return failed(stderr, "box", err)
		}
	}
	sp, err := queue.Open(*spoolDir)
	if err != nil {
		return failed(stderr, "box", err)
	}
	if *auditFile == "" {
		if p := sp.AuditPath(); p != "" {
			*auditFile = p
		} else if *auditFile, err = audit.DefaultPath(); err != nil {
			return failed(stderr, "box", err)
		}
	}
	sluice, err := SluiceBeside()
	if err != nil {
		return failed(stderr, "box", err)
	}
	ctx, stop := signalCtx()
	defer stop()
	logf := func(format string, a ...any) {
		fmt.Fprintf(stderr, "%s sluice hub box %s: %s\n", time.Now().Format("15:04:05"), c.Name, fmt.Sprintf(format, a...))
	}
	// The first connection is waited for: a hub that is not up yet is
	// tried again, while the box serves locally.
	cl, ok := connectRetrying(ctx, retry{what: "the hub", meanwhile: "serving locally, ", reconnected: "reconnected to the hub", every: 5 * time.Second, logf: logf},
		func(opts ...nats.Option) (*Client, error) { return dial(ctx, *url, *credsPath, opts...) })
	if !ok {
		return exitOK
	}
	defer cl.Close()
	logf("bridging spool %s (audit log %s) to %s", sp.Dir(), *auditFile, cl.NC.ConnectedUrlRedacted())
	b := &Box{Name: c.Name, Spool: sp, AuditPath: *auditFile, Client: cl, Logf: logf, Roots: roots,
		Apply: &ExecApplier{Sluice: sluice, Args: []string{"--spool", sp.Dir()}, Audit: *auditFile}}
	if err := b.Run(ctx); err != nil {
		return failed(stderr, "box", err)
	}
	return exitOK
}

func cmdLs(args []string, stdout, stderr io.Writer) int {
	fs := flags("ls", "[--box NAME] [--hub URL] [--hub-creds FILE]", "List the requests waiting for a person on every box (oldest first).", stdout, stderr)
	url, credsPath := clientFlags(fs)
	box := fs.String("box", "", "only this box's")
	if _, code, ok := parse(fs, args); !ok {
		return code
	}
	if c, code := roleCreds("ls", *credsPath, RoleConsole, stderr); c == nil {
		return code
	}
	ctx, stop := signalCtx()
	defer stop()
	cl, err := dial(ctx, *url, *credsPath)
	if err != nil {
		return failed(stderr, "ls", err)
	}
	defer cl.Close()
	ps, err := cl.List(ctx, *box)
	if err != nil {
		return failed(stderr, "ls", err)
	}
	if len(ps) == 0 {
		fmt.Fprintln(stdout, "nothing waits on any box")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "BOX/ID\tDIGEST\tAGE\tAGENT\tVERDICT\tREQUEST")
	for _, p := range ps {
		var req queue.Request
		summary, agent := "(unreadable)", ""
		if err := json.Unmarshal(p.Request, &req); err == nil {
			summary, agent = req.Summary(), req.Agent
		}
		verdict := ""
		if p.Verdict != nil {
			verdict = string(p.Verdict.Action) + " " + p.Verdict.Category
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\n", p.Box, p.ID, safe(short(p.Digest)), age(p.QueuedAt), safe(agent), safe(verdict), safe(summary))
	}
	tw.Flush()
	return exitOK
}

func cmdDecide(decision string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := decision
	help := "Approve a request waiting on a box: the box runs it, confined and audited\nthere, with you (and this console) named as who approved; its output\nstreams here. The request is shown first and approved on your yes (--yes:\nwithout asking); BOX/ID@DIGEST (the digest 'sluice hub ls' shows) approves\nonly that request file, whatever it became since. Refused if another\nconsole decided first."
	if decision == Deny {
		help = "Deny a request waiting on a box: its agent gets the reason. Refused if another\nconsole decided first."
	}
	usage := "BOX/ID[@DIGEST] [--yes] [--reason TEXT] [--no-wait] [--hub URL] [--hub-creds FILE]"
	if decision == Approve {
		usage = "BOX/ID[@DIGEST] [--yes] [--run] [--no-wait] [--hub URL] [--hub-creds FILE]"
		help += "\nA connect request (a run on the box asks to reach a host outside its set)\nis allowed for the connections waiting on it; --run allows that host\nand port for the rest of the run (a rule for every run is made on the\nbox: network_allow in its policy file)."
	}
	fs := flags(name, usage, help, stdout, stderr)
	url, credsPath := clientFlags(fs)
	reason := fs.String("reason", "", "tell the agent why (deny)")
	noWait := fs.Bool("no-wait", false, "do not wait for the box to act")
	yes := fs.Bool("yes", false, "approve without showing the request and asking")
	forRun := new(bool)
	if decision == Approve {
		forRun = fs.Bool("run", false, "a connect request: allow the host for the rest of its run, not once")
	}
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintf(stderr, "sluice hub %s: give one BOX/ID (see 'sluice hub ls')\n", name)
		return exitUsage
	}
	ref, shown, _ := strings.Cut(pos[0], "@")
	box, id, found := strings.Cut(ref, "/")
	if !found || !ValidName(box) || !queue.ValidID(id) || (shown != "" && !validDigestPrefix(shown)) {
		fmt.Fprintf(stderr, "sluice hub %s: %q is not BOX/ID (see 'sluice hub ls')\n", name, pos[0])
		return exitUsage
	}
	if c, code := roleCreds(name, *credsPath, RoleConsole, stderr); c == nil {
		return code
	}
	ctx, stop := signalCtx()
	defer stop()
	cl, err := dial(ctx, *url, *credsPath)
	if err != nil {
		return failed(stderr, name, err)
	}
	defer cl.Close()
	if id, err = pendingID(ctx, cl, box, id); err != nil {
		fmt.Fprintf(stderr, "sluice hub %s: %s\n", name, safe(err.Error()))
		return exitFail
	}
	as := wire.AsName(audit.Login())
	var outs []*nats.Subscription
	var outMu sync.Mutex // the two subscriptions' callbacks
	var track wire.OutputTrack
	term := &queue.TermSafe{W: stdout} // one for the whole stream: a sequence split between messages is dropped whole
	if decision == Approve && !*noWait {
		// Subscribed before deciding: nothing of the output is missed.
		// Each piece on OutputSubject.OFFSET; a box of an earlier version
		// publishes on OutputSubject itself.
		for _, subject := range []string{OutputSubject(box, id) + ".*", OutputSubject(box, id)} {
			sub, err := cl.NC.Subscribe(subject, func(m *nats.Msg) {
				// The box publishes plain messages; one with a reply
				// subject or headers was delivered by a JetStream
				// consumer someone pointed here, not written by the box.
				if m.Reply != "" || len(m.Header) > 0 {
					return
				}
				_, _, off, ok := outputKey(m.Subject)
				if !ok {
					return
				}
				outMu.Lock()
				defer outMu.Unlock()
				term.Write(track.Piece(off, m.Data))
			})
			if err != nil {
				return failed(stderr, name, err)
			}
			defer sub.Unsubscribe()
			outs = append(outs, sub)
		}
	}
	shownDiff := ""
	if decision == Approve && shown == "" {
		// What the person approves is what they see here: its digest
		// goes with the approval.
		p, err := cl.Request(ctx, box, id)
		if err != nil {
			fmt.Fprintf(stderr, "sluice hub %s: %s/%s: %s\n", name, box, id, safe(err.Error()))
			return exitFail
		}
		fmt.Fprint(stderr, describe(p))
		if !*yes {
			if !isTerminal(stdin) {
				fmt.Fprintf(stderr, "sluice hub approve: not asking without a terminal: give --yes, or %s/%s@%s\n", box, id, p.Digest[:12])
				return exitUsage
			}
			fmt.Fprint(stderr, "approve it? [y/N] ")
			if !readYes(stdin) {
				fmt.Fprintf(stderr, "sluice hub approve: %s/%s not approved; it still waits\n", box, id)
				return exitFail
			}
		}
		shown, shownDiff = p.Digest, wire.DiffDigest(p.Diff, p.DiffErr)
	}
	scope := ""
	if *forRun {
		scope = wire.ScopeRun
	}
	d, err := cl.Decide(ctx, Choice{Box: box, ID: id, Decision: decision, As: as, Reason: *reason, Digest: shown, DiffDigest: shownDiff, Scope: scope})
	if err != nil {
		fmt.Fprintf(stderr, "sluice hub %s: %s/%s: %s\n", name, box, id, safe(err.Error()))
		return exitFail
	}
	fmt.Fprintf(stderr, "sluice hub %s: %s/%s %s by %s\n", name, box, id, map[string]string{Approve: "approved", Deny: "denied"}[decision], safe(d.By))
	if *noWait {
		return exitOK
	}
	o, err := cl.Outcome(ctx, box, id)
	if err != nil {
		fmt.Fprintf(stderr, "sluice hub %s: no word from %s yet (%v); its result will be on the hub ('sluice hub ls')\n", name, box, err)
		return exitFail
	}
	if len(outs) > 0 {
		// The box published the run's output before its outcome: the hub
		// has sent all of it by now. What this client holds of it is
		// written before the last line: a flush only brings it in, into
		// the subscription's queue, and unsubscribing with messages still
		// queued for the callback drops them. Draining hands each to the
		// callback, then closes the subscription.
		for _, out := range outs {
			drained := make(chan struct{})
			out.SetClosedHandler(func(string) { close(drained) })
			if out.Drain() == nil {
				select {
				case <-drained:
				case <-time.After(5 * time.Second):
				}
			}
		}
		// What the hub could not carry (it was down) is said, not
		// left out.
		outMu.Lock()
		term.Write(track.End(o.OutputBytes))
		outMu.Unlock()
	}
	line, applied := outcomeLine(box, o)
	fmt.Fprintf(stderr, "sluice hub %s: %s\n", name, line)
	if !applied {
		return exitFail
	}
	return exitOK
}

// outcomeLine says what box did with a decision, as its outcome o tells,
// and whether it carried it out.
func outcomeLine(box string, o *Outcome) (string, bool) {
	switch {
	case !o.Applied && o.Reason == "":
		// An outcome without the hub's reason: the box answered the
		// request itself (its person, its policy, an expiry) first.
		return fmt.Sprintf("%s did not apply it: the request was answered on the box (%s)", box, safe(string(o.Status))), false
	case !o.Applied:
		return fmt.Sprintf("%s did not apply it: %s", box, safe(o.Reason)), false
	case o.ExitCode != nil:
		return fmt.Sprintf("%s: %s, exit status %d", box, safe(string(o.Status)), *o.ExitCode), true
	case o.Reason != "":
		return fmt.Sprintf("%s: %s (%s)", box, safe(string(o.Status)), safe(o.Reason)), true
	case o.Scope == queue.ScopeRun:
		return fmt.Sprintf("%s: %s (the connection, for the rest of its run)", box, safe(string(o.Status))), true
	case o.Scope == queue.ScopeOnce:
		return fmt.Sprintf("%s: %s (the connection, this once)", box, safe(string(o.Status))), true
	default:
		return fmt.Sprintf("%s: %s", box, safe(string(o.Status))), true
	}
}

// roleCreds reads the credentials at path for command cmd, which needs a
// user of role; nil and the exit status when it cannot have them.
func roleCreds(cmd, path, role string, stderr io.Writer) (*Creds, int) {
	c, err := ReadCreds(path)
	if err != nil {
		fmt.Fprintf(stderr, "sluice hub %s: %v\n", cmd, err)
		return nil, exitFail
	}
	if c.Role != role {
		fmt.Fprintf(stderr, "sluice hub %s: %s holds a %s's credentials (%s), not a %s's: issue a %s's with 'sluice hub add-%s NAME' on the hub and give its file with --hub-creds FILE\n", cmd, path, c.Role, c.Name, role, role, role)
		return nil, exitUsage
	}
	return c, exitOK
}

func cmdFeed(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flags("feed", "[--hub URL] [--hub-creds FILE]", "The fleet as a console shows it, one JSON object a line on stdout (what\nwaits, what left, outcomes, output), taking decisions one JSON object a\nline on stdin; 'sluice console --hub' runs it. Ends when stdin closes.\nThe lines are described in docs/protocol.md (the hub).", stdout, stderr)
	url, credsPath := clientFlags(fs)
	if code, ok := parseNone(fs, args, stderr); !ok {
		return code
	}
	c, code := roleCreds("feed", *credsPath, RoleConsole, stderr)
	if c == nil {
		return code
	}
	ctx, stop := signalCtx()
	defer stop()
	f := &Feed{Out: stdout, As: wire.AsName(audit.Login())}
	cl, err := dial(ctx, *url, *credsPath,
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			text := "lost the hub"
			if err != nil {
				text += ": " + err.Error()
			}
			f.Link(false, text+"; retrying")
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { f.Link(true, nc.ConnectedUrlRedacted()) }))
	if err != nil {
		return failed(stderr, "feed", err)
	}
	defer cl.Close()
	f.Client = cl
	if err := f.Run(ctx, stdin); err != nil {
		return failed(stderr, "feed", err)
	}
	return exitOK
}

func age(t time.Time) string {
	d := time.Since(t).Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	if d < time.Hour {
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh", int(d.Hours()))
}

// safe is s as a line a terminal shows as text.
func safe(s string) string {
	p, _ := queue.Printable(s)
	return p
}

// describe is a pending request as a person checks it before approving.
func describe(p *Pending) string {
	var req queue.Request
	summary, agent, cwd := "(unreadable)", "", ""
	if err := json.Unmarshal(p.Request, &req); err == nil {
		summary, agent, cwd = req.Summary(), req.Agent, req.Cwd
	}
	verdict := "(none)"
	if p.Verdict != nil {
		verdict = string(p.Verdict.Action) + " " + p.Verdict.Category + ", risk " + p.Verdict.Risk
		if len(p.Verdict.Reasons) > 0 {
			verdict += ": " + strings.Join(p.Verdict.Reasons, "; ")
		}
	}
	s := fmt.Sprintf("  %s/%s (digest %s)\n  agent:   %s\n  in:      %s\n  verdict: %s\n  request: %s\n",
		p.Box, p.ID, safe(short(p.Digest)), safe(agent), safe(cwd), safe(verdict), safe(summary))
	switch {
	case p.DiffErr != "":
		s += "  diff:    " + safe(p.DiffErr) + "\n"
	case p.Diff != "":
		s += "  diff:\n"
		for _, l := range strings.Split(strings.TrimSuffix(p.Diff, "\n"), "\n") {
			s += "    " + safe(l) + "\n"
		}
	}
	return s
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}

// validDigestPrefix reports whether d is 8 to 64 lower-case hex digits.
func validDigestPrefix(d string) bool {
	return len(d) >= 8 && len(d) <= 64 && validDigest(d+strings.Repeat("0", 64-len(d)))
}
