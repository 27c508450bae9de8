package hub

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// HubOptions configure an embedded hub.
type HubOptions struct {
	Listen string    // host:port; default ":4222"
	Store  *Store    // required
	Log    io.Writer // where the hub says what it does; nil: nowhere
	Limits Limits    // the pending bucket's bounds (Limits' defaults)
}

// Hub is a running embedded hub.
type Hub struct {
	srv   *server.Server
	store *Store
	opts  server.Options
	admin nkeys.KeyPair
	users []User
	log   io.Writer

	limits      Limits
	stopService context.CancelFunc
	serviceDone chan struct{}
}

// StartHub starts the NATS server with JetStream in store, admitting the
// store's users, and makes the buckets. Stop it with Shutdown.
func StartHub(o HubOptions) (*Hub, error) {
	if o.Listen == "" {
		o.Listen = ":4222"
	}
	host, portStr, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %v (want HOST:PORT or :PORT)", o.Listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return nil, fmt.Errorf("--listen %q: bad port", o.Listen)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	if port == 0 {
		// A free port, as with any listener (NATS reads 0 as its default,
		// 4222).
		port = server.RANDOM_PORT
	}
	cert, err := o.Store.TLS()
	if err != nil {
		return nil, err
	}
	admin, err := o.Store.adminKey()
	if err != nil {
		return nil, err
	}
	h := &Hub{store: o.Store, admin: admin, log: o.Log, limits: o.Limits.withDefaults()}
	if h.log == nil {
		h.log = io.Discard
	}
	h.users, err = o.Store.Users()
	if err != nil {
		return nil, err
	}
	h.opts = server.Options{
		ServerName: "sluice-hub",
		Host:       host,
		Port:       port,
		NoSigs:     true,
		NoLog:      true,
		JetStream:  true,
		StoreDir:   filepath.Join(o.Store.Dir, "jetstream"),
		// Every client speaks TLS 1.3 to the pinned certificate.
		TLS:        true,
		TLSConfig:  &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13},
		TLSTimeout: 5,
		MaxPayload: 8 << 20,
	}
	h.opts.Nkeys = h.nkeyUsers(h.users)
	srv, err := server.NewServer(&h.opts)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	srv.SetLoggerV2(&logger{w: h.log}, false, false, false)
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("hub: the NATS server did not start listening on %s within 30 s", o.Listen)
	}
	h.srv = srv
	if err := h.makeBuckets(); err != nil {
		srv.Shutdown()
		return nil, err
	}
	if err := h.startService(); err != nil {
		srv.Shutdown()
		return nil, err
	}
	return h, nil
}

// startService runs the hub's Service in this process, as the
// administrator, until Shutdown.
func (h *Hub) startService() error {
	nc, err := h.adminConn()
	if err != nil {
		return fmt.Errorf("hub: the decision service: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stopService, h.serviceDone = cancel, make(chan struct{})
	svc := &Service{NC: nc, Limits: h.limits, Logf: func(f string, a ...any) {
		fmt.Fprintf(h.log, "sluice hub: "+f+"\n", a...)
	}}
	ready := make(chan struct{})
	svc.Ready = func() { close(ready) }
	go func() {
		defer close(h.serviceDone)
		defer nc.Close()
		if err := svc.Run(ctx); err != nil {
			fmt.Fprintf(h.log, "sluice hub: NO DECISION SERVICE: %v\n", err)
		}
	}()
	select {
	case <-ready:
		return nil
	case <-h.serviceDone:
	case <-time.After(30 * time.Second):
	}
	cancel()
	<-h.serviceDone
	return errors.New("hub: the decision service did not start")
}

// nkeyUsers are the server's users: the admin and the store's.
func (h *Hub) nkeyUsers(us []User) []*server.NkeyUser {
	pub, _ := h.admin.PublicKey()
	out := []*server.NkeyUser{{Nkey: pub}}
	for _, u := range us {
		out = append(out, &server.NkeyUser{Nkey: u.NKey, Permissions: permissions(u.Role, u.Name)})
	}
	return out
}

// Addr is the address the hub listens on (with the port it got for :0).
func (h *Hub) Addr() net.Addr { return h.srv.Addr() }

// URL is a nats:// URL of the hub on this machine.
func (h *Hub) URL() string {
	a := h.srv.Addr().(*net.TCPAddr)
	return fmt.Sprintf("nats://127.0.0.1:%d", a.Port)
}

// Shutdown stops the hub.
func (h *Hub) Shutdown() {
	if h.stopService != nil {
		h.stopService()
		<-h.serviceDone
	}
	h.srv.Shutdown()
	h.srv.WaitForShutdown()
}

// adminConn connects in-process with the hub's own key.
func (h *Hub) adminConn() (*nats.Conn, error) {
	pub, _ := h.admin.PublicKey()
	return nats.Connect("", nats.InProcessServer(h.srv), nats.Nkey(pub, h.admin.Sign), nats.Name("sluice-hub admin"))
}

// makeBuckets creates the three buckets (or checks they are there).
func (h *Hub) makeBuckets() error {
	nc, err := h.adminConn()
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	defer nc.Close()
	return MakeBuckets(nc, h.limits)
}

// MakeBuckets creates the fleet's buckets on the NATS server nc is
// connected to, with the privileges that takes: the embedded hub does it
// at start; for a nats-server process, 'sluice hub init' does it once.
//
// They are key-value buckets with the server enforcing what the clients'
// permissions cannot: no rollup and no purge (a box's or console's publish
// to its own keys with a rollup header would otherwise wipe everyone's),
// no message deletion, and, for decisions, one message per key for good
// (a later write to a decided key is refused by the server: the first
// decision wins). The pending bucket forgets a request after twice
// lim.MaxAge (at least an hour more): the hub's Service takes it off at
// lim.MaxAge and says so; this bounds the bucket when no service runs.
//
// The retired decisions bucket of earlier versions is kept, capturing
// nothing: an earlier version's console opens it at start, and its writes
// there reach the Service, which tells it to upgrade.
func MakeBuckets(nc *nats.Conn, lim Limits) error {
	lim = lim.withDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, b := range []struct {
		bucket, desc string
		ttl          time.Duration
		once         bool
		subjects     string
	}{
		{BucketPending, "sluice: requests waiting for a person, by BOX.ID", lim.MaxAge + max(lim.MaxAge, time.Hour), false, ""},
		{BucketDecisions, "sluice: decisions, by BOX.ID, written by the hub's decision service; the first one stands", 0, true, ""},
		{BucketResults, "sluice: what each box did with a decision, by BOX.ID", 30 * 24 * time.Hour, false, ""},
		{bucketRetired, "sluice: retired (decisions are in " + BucketDecisions + "); captures nothing", 30 * 24 * time.Hour, true, "sluice.retired." + bucketRetired},
	} {
		subjects := "$KV." + b.bucket + ".>"
		if b.subjects != "" {
			subjects = b.subjects
		}
		cfg := jetstream.StreamConfig{
			Name:              "KV_" + b.bucket,
			Description:       b.desc,
			Subjects:          []string{subjects},
			MaxMsgsPerSubject: 1,
			MaxBytes:          -1,
			MaxMsgs:           -1,
			MaxConsumers:      -1,
			MaxMsgSize:        -1,
			MaxAge:            b.ttl,
			Storage:           jetstream.FileStorage,
			Replicas:          1,
			Duplicates:        2 * time.Minute,
			Discard:           jetstream.DiscardNew,
			AllowDirect:       true,
			DenyDelete:        true,
			DenyPurge:         true,
			AllowRollup:       false,
		}
		if b.once {
			cfg.DiscardNewPerSubject = true
		}
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("hub: bucket %s: %w", b.bucket, err)
		}
	}
	return nil
}

// Run serves until ctx ends, admitting users added to or removed from the
// store meanwhile within a second.
func (h *Hub) Run(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			h.Shutdown()
			return nil
		case <-t.C:
			us, err := h.store.Users()
			if err != nil {
				fmt.Fprintf(h.log, "sluice hub: users NOT reloaded, the last good list stays in force: %v\n", err)
				continue
			}
			if slices.Equal(us, h.users) {
				continue
			}
			opts := h.opts.Clone()
			opts.Nkeys = h.nkeyUsers(us)
			if err := h.srv.ReloadOptions(opts); err != nil {
				fmt.Fprintf(h.log, "sluice hub: users NOT reloaded: %v\n", err)
				continue
			}
			h.opts, h.users = *opts, us
			fmt.Fprintf(h.log, "sluice hub: %d boxes and consoles admitted\n", len(us))
		}
	}
}

// logger passes the server's warnings and errors on.
type logger struct{ w io.Writer }

func (l *logger) Noticef(string, ...any) {}
func (l *logger) Tracef(string, ...any)  {}
func (l *logger) Debugf(string, ...any)  {}
func (l *logger) Warnf(f string, a ...any) {
	fmt.Fprintf(l.w, "sluice hub: nats: "+f+"\n", a...)
}
func (l *logger) Errorf(f string, a ...any) {
	fmt.Fprintf(l.w, "sluice hub: nats: error: "+f+"\n", a...)
}
func (l *logger) Fatalf(f string, a ...any) {
	fmt.Fprintf(l.w, "sluice hub: nats: fatal: "+f+"\n", a...)
}
