package exec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/netproxy/netrule"
	"github.com/sluice-dev/sluice/queue"
)

// A confined networked run reaches the network only through a proxy of
// its own (package netproxy), served here on the confinement's listener
// for as long as the run lasts: it lets through the hosts the verdict
// names (Options.Hosts) and network_allow (Confine.NetAllow), refuses
// network_deny, and asks a person about the rest (Runner.Ask). What the
// run contacted is the result's Network.

// Connect is a question about a host outside a run's set: the run (its
// request) wants Host:Port.
type Connect struct {
	RunID   string // the request whose run asks
	Command string // its command, for the person
	Cwd     string
	Agent   string
	Session string
	Host    string
	Port    int
}

// AskFunc asks a person whether a run may reach a host outside its set.
// It returns when ctx ends (the proxy's network_ask_timeout), with an
// error.
type AskFunc func(ctx context.Context, q Connect) (netrule.Answer, error)

// A ProxyServer is a run's proxy: package netproxy's Proxy.
type ProxyServer interface {
	// Serve serves the run's connections on l until Close.
	Serve(l net.Listener) error
	// Close stops it and every connection it holds.
	Close() error
	// Record is what the run contacted, as its result holds it.
	Record() []queue.Contact
}

// NewProxyServer makes a run's proxy for cfg. It is nil in a program that
// starts no networked run: package netproxy links net/http, which would
// cost every agent process's start about 0.3 ms, so only the programs
// that run commands (sluice-engine, sluice-console) link it,
// by importing exec/proxyhost, which sets this.
var NewProxyServer func(cfg netrule.Config) (ProxyServer, error)

// ErrNoProxyHost is what a networked run started in a program that hosts
// no proxy fails with.
var ErrNoProxyHost = errors.New("exec: this program hosts no network proxy (it does not link exec/proxyhost)")

// HostsProxy reports whether this program can host a networked run's
// proxy.
func HostsProxy() bool { return NewProxyServer != nil }

// runProxy is one run's proxy while it runs.
type runProxy struct {
	p      ProxyServer
	url    string // as the run's environment names it, with the token
	served chan error
	once   sync.Once
	got    []queue.Contact
}

// startProxy serves the run's proxy on box's listener; nil when the run
// has none.
func startProxy(box *sandbox.Confinement, req *queue.Request, hosts HostSet, c *Confine, ask AskFunc) (*runProxy, error) {
	return serveProxy(box, Connect{RunID: req.ID, Command: req.Command, Cwd: req.Cwd, Agent: req.Agent, Session: req.Session},
		hosts, c, ask)
}

// HostSet is what a run's verdict says of the network: the hosts it
// reaches without asking (Allow, netproxy rules), why each (By: "knowledge:
// npm", "git remote origin", ...; the proxy's records say it), and the
// rules no one is asked about because the person refused them (Deny: the
// policy files' network_deny, a project's among them).
type HostSet struct {
	Allow []string
	By    map[string]string
	Deny  []string
}

// RunProxy is the proxy of a run started outside a Runner ('sluice
// sandbox' hosts its command's proxy itself).
type RunProxy struct{ rp *runProxy }

// StartProxy serves the proxy of box's run, which run describes (its
// Host and Port are left empty): hosts and c's network_allow admitted,
// c's network_deny refused, ask asked about the rest. Nil when the run
// has no proxy (box prepared without Spec.Proxy).
func StartProxy(box *sandbox.Confinement, run Connect, hosts []string, c *Confine, ask AskFunc) (*RunProxy, error) {
	rp, err := serveProxy(box, run, HostSet{Allow: hosts}, c, ask)
	if rp == nil || err != nil {
		return nil, err
	}
	return &RunProxy{rp}, nil
}

// URL is the proxy as the run's environment names it (sandbox.ProxyEnv).
func (p *RunProxy) URL() string { return p.rp.url }

// Close stops the proxy, once the run's processes are gone, and returns
// what the run contacted.
func (p *RunProxy) Close() []queue.Contact { return p.rp.close() }

// ProxyNote is what a failed run of a proxy ends with (Runner.Run's own
// runs get it in their output): the proxy's refusals, or that only the
// proxy leads out where tail says a connection failed.
func ProxyNote(cs []queue.Contact, tail []byte) string { return proxyNote(cs, tail) }

// serveProxy is startProxy for the run q describes.
func serveProxy(box *sandbox.Confinement, q Connect, hosts HostSet, c *Confine, ask AskFunc) (*runProxy, error) {
	ln := box.ProxyListener()
	if ln == nil {
		return nil, nil
	}
	cfg, err := proxyConfig(hosts, c)
	if err != nil {
		return nil, err
	}
	if ask != nil {
		cfg.Ask = func(ctx context.Context, host string, port int) (netrule.Answer, error) {
			q := q
			q.Host, q.Port = host, port
			return ask(ctx, q)
		}
	}
	proxyURL := box.ProxyURL()
	if box.ProxyShared() {
		// Any process of the host reaches this port: only the run
		// knows the token its environment names.
		cfg.Token = newToken()
		u, err := url.Parse(proxyURL)
		if err != nil {
			return nil, err
		}
		u.User = url.UserPassword("sluice", cfg.Token)
		proxyURL = u.String()
	}
	if NewProxyServer == nil {
		return nil, ErrNoProxyHost
	}
	p, err := NewProxyServer(cfg)
	if err != nil {
		return nil, err
	}
	rp := &runProxy{p: p, url: proxyURL, served: make(chan error, 1)}
	go func() { rp.served <- p.Serve(ln) }()
	return rp, nil
}

// proxyConfig is the run's host set and refusals: the verdict's hosts
// (a host the policy named that does not read as a rule is left out: it
// only narrows), network_allow and network_deny (which must read).
func proxyConfig(hosts HostSet, c *Confine) (netrule.Config, error) {
	var cfg netrule.Config
	for _, h := range hosts.Allow {
		by := hosts.By[h]
		if by == "" {
			by = "verdict"
		}
		if r, err := netrule.ParseRules(by, h); err == nil {
			cfg.Allow = append(cfg.Allow, r...)
		}
	}
	for _, h := range hosts.Deny {
		if r, err := netrule.ParseRules("network_deny", h); err == nil {
			cfg.Deny = append(cfg.Deny, r...)
		}
	}
	if c != nil {
		allow, err := netrule.ParseRules("network_allow", c.NetAllow...)
		if err != nil {
			return cfg, fmt.Errorf("network_allow: %w", err)
		}
		deny, err := netrule.ParseRules("network_deny", c.NetDeny...)
		if err != nil {
			return cfg, fmt.Errorf("network_deny: %w", err)
		}
		cfg.Allow, cfg.Deny = append(cfg.Allow, allow...), append(cfg.Deny, deny...)
		cfg.Upstream, cfg.AskTimeout = c.NetUpstream, c.NetAskTimeout
		cfg.Resolve = c.resolve
	}
	return cfg, nil
}

// newToken is 128 random bits in hex.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// close stops the proxy once the run's processes are gone and returns
// what the run contacted.
func (rp *runProxy) close() []queue.Contact {
	if rp == nil {
		return nil
	}
	rp.once.Do(func() {
		_ = rp.p.Close()
		<-rp.served
		rp.got = rp.p.Record()
	})
	return rp.got
}

// proxyNote is what a failed proxied run ends with: the connections its
// proxy refused, which host and why; else, where its output says a
// connection failed, that only the proxy leads out.
func proxyNote(cs []queue.Contact, tail []byte) string {
	if note := refusals(cs); note != "" {
		return note
	}
	if netRe().Match(tail) {
		return "sluice: this run reaches the network only through its proxy (HTTPS_PROXY, HTTP_PROXY); a program that ignores those settings cannot connect, and a person can run the command unconfined (console key U)\n"
	}
	return ""
}

// refusals are the lines for the connections a proxy refused.
func refusals(cs []queue.Contact) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, c := range cs {
		why, ok := strings.CutPrefix(c.AllowedBy, "refused: ")
		target := queue.Request{Host: c.Host, Port: c.Port}
		line := "sluice: the run's proxy refused " + target.Target() + ": " + why + "\n"
		if !ok || seen[line] {
			continue
		}
		seen[line] = true
		b.WriteString(line)
	}
	return b.String()
}

// SpoolAsk asks through spool sp: each question is a connect request,
// which the console, 'sluice approve' and 'sluice deny' and any other
// front end answer like any request; v checks an allow against the
// audit log (audit.Verifier). An allow for the run admits the host for
// the rest of the run; an allow, once; anything else refuses. The
// request is withdrawn when ctx ends (nobody answered in time), and
// soon when nothing serves the spool.
func SpoolAsk(sp *queue.Spool, v queue.Verifier, actor func() string) AskFunc {
	return func(ctx context.Context, q Connect) (netrule.Answer, error) {
		now := time.Now().UTC()
		req := &queue.Request{Version: queue.Version, ID: queue.NewID(), Kind: queue.KindConnect,
			Host: q.Host, Port: q.Port, RunID: q.RunID, Command: q.Command, Cwd: q.Cwd,
			Agent: q.Agent, Session: q.Session, CreatedAt: now}
		if d, ok := ctx.Deadline(); ok {
			req.ExpiresAt = d.UTC()
		}
		if err := req.Validate(); err != nil {
			return netrule.AnswerDeny, err
		}
		res, err := sp.Send(ctx, req, queue.SendOptions{Verify: v, Actor: actor, Unserved: time.Second,
			Why: func(error) string { return "nobody answered in time: the connection was refused" }})
		switch {
		case err != nil:
			return netrule.AnswerDeny, err
		case res.Decision != queue.Allow:
			return netrule.AnswerDeny, nil
		case res.Scope == queue.ScopeRun:
			return netrule.AnswerRun, nil
		}
		return netrule.AnswerOnce, nil
	}
}
