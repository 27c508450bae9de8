package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/netproxy/netrule"
	"github.com/sluice-dev/sluice/queue"
)

// The proxy's configuration and host rules live in package netrule, which
// links no net/http: sluice's own command line reads and checks them, and
// only the programs that host a run's proxy link this package.

// DefaultAskTimeout is netrule.DefaultAskTimeout.
const DefaultAskTimeout = netrule.DefaultAskTimeout

// Config is what one run's proxy lets through (netrule.Config).
type Config = netrule.Config

// Answer is the person's answer about a host outside the run's set.
type Answer = netrule.Answer

// The answers (netrule's).
const (
	AnswerDeny = netrule.AnswerDeny
	AnswerOnce = netrule.AnswerOnce
	AnswerRun  = netrule.AnswerRun
)

// Rule is a host rule (netrule.Rule).
type Rule = netrule.Rule

// ParseRule is netrule.ParseRule.
func ParseRule(s string) (Rule, error) { return netrule.ParseRule(s) }

// ParseRules is netrule.ParseRules.
func ParseRules(by string, patterns ...string) ([]Rule, error) {
	return netrule.ParseRules(by, patterns...)
}

// Proxy is one run's proxy. Its methods are safe for concurrent use.
type Proxy struct {
	cfg      Config
	upstream *url.URL
	dialer   net.Dialer

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	remember  map[string]Answer // AnswerRun or AnswerDeny, by target key
	asking    map[string]*question

	contacts contacts
}

// New checks cfg and makes a proxy; Serve starts it.
func New(cfg Config) (*Proxy, error) {
	if cfg.AskTimeout <= 0 {
		cfg.AskTimeout = DefaultAskTimeout
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 30 * time.Second
	}
	p := &Proxy{
		cfg:       cfg,
		dialer:    net.Dialer{Timeout: cfg.DialTimeout},
		listeners: map[net.Listener]struct{}{},
		conns:     map[net.Conn]struct{}{},
		remember:  map[string]Answer{},
		asking:    map[string]*question{},
	}
	if cfg.Upstream != "" {
		u, err := parseUpstream(cfg.Upstream)
		if err != nil {
			return nil, err
		}
		p.upstream = u
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// parseUpstream reads network_upstream_proxy.
func parseUpstream(s string) (*url.URL, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("netproxy: upstream proxy: %w", err)
	}
	if u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("netproxy: upstream proxy %q: want http://host:port", u.Redacted())
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "80")
	}
	return u, nil
}

// Serve accepts connections on l until Close (then it returns nil) or
// until l fails. It may be called for more than one listener.
func (p *Proxy) Serve(l net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return net.ErrClosed
	}
	p.listeners[l] = struct{}{}
	p.mu.Unlock()
	for {
		c, err := l.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			delete(p.listeners, l)
			p.mu.Unlock()
			if closed {
				return nil
			}
			return fmt.Errorf("netproxy: accept: %w", err)
		}
		if !p.track(c) {
			_ = c.Close()
			continue
		}
		go p.serveConn(c)
	}
}

// Close stops the proxy: it closes its listeners and every connection,
// refuses the questions still open, and returns once every connection's
// bytes are in Contacts.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	p.cancel()
	var err error
	for l := range p.listeners {
		if e := l.Close(); e != nil && !errors.Is(e, net.ErrClosed) {
			err = e
		}
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// Contacts lists the hosts and ports the run contacted or tried to, in the
// order first seen: one entry per host, port and what allowed (or
// refused) it. A connection is listed from when it is let through; its
// bytes each way are counted in when it ends (after Close, all of them).
func (p *Proxy) Contacts() []Contact { return p.contacts.list() }

// track files c so that Close closes it; false if the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return true
}

// untrack forgets c, closing it.
func (p *Proxy) untrack(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	p.wg.Done()
}

// serveConn speaks SOCKS5 or HTTP on one client connection, told apart by
// the first byte (a SOCKS5 greeting starts with 5, never an HTTP method).
func (p *Proxy) serveConn(c net.Conn) {
	defer p.untrack(c)
	lr := &limitReader{r: c}
	br := bufio.NewReaderSize(lr, 8<<10)
	lr.n = maxHeader
	_ = c.SetReadDeadline(time.Now().Add(idleTimeout))
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == socksVersion {
		p.serveSOCKS(c, lr, br)
		return
	}
	p.serveHTTP(c, lr, br)
}

// Record is what the run contacted, as its result holds it (Queue of
// Contacts).
func (p *Proxy) Record() []queue.Contact { return Queue(p.Contacts()) }
