package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"
)

// DefaultAskTimeout is how long a connection to a host outside the run's
// set waits for the person when Config.AskTimeout is 0 (pip gives up after
// 15 s).
const DefaultAskTimeout = 10 * time.Second

// Config is what one run's proxy lets through.
type Config struct {
	// Allow is the run's host set: the hosts its verdict names and the
	// person's own rules (network_allow), each labelled with its By.
	Allow []Rule
	// Deny refuses what it matches even where Allow admits it: names by
	// name rule, IP literals and resolved addresses by address rule.
	Deny []Rule
	// Ask is asked about a host outside the run's set; the connection
	// holds meanwhile. Connections to the same host and port that arrive
	// while one question is open wait for its answer rather than asking
	// again. Ask must return when its context ends; an error refuses. Nil
	// refuses every host outside the set.
	Ask func(ctx context.Context, host string, port int) (Answer, error)
	// AskTimeout bounds the wait for an answer: nobody answering within it
	// refuses the connection (not remembered: the next one asks again).
	// 0 means DefaultAskTimeout.
	AskTimeout time.Duration
	// Upstream, if set, is an HTTP proxy (http://[user:pass@]host:port or
	// host:port) every allowed connection goes through
	// (network_upstream_proxy). Names are then resolved by the upstream,
	// not here: only IP literals are checked against the host-service
	// ranges and Deny's address rules.
	Upstream string
	// Resolve, if set, replaces DNS (tests only: it maps registries' names
	// to local servers, ports included). Its answers are checked like
	// DNS's: an answer in a host-service range (127.0.0.1) is refused
	// unless an Allow address rule names it, so a test that maps a name to
	// a local server also allows that server's address ("127.0.0.1:PORT").
	Resolve func(ctx context.Context, host string, port int) ([]netip.AddrPort, error)
	// DialTimeout bounds each dial; 0 means 30 s.
	DialTimeout time.Duration
	// Token, if set, is the password every client must give (HTTP:
	// Proxy-Authorization basic credentials, any user name; SOCKS5: its
	// username/password method): a proxy on a port other processes of
	// the host can reach serves its run alone. A client without it is
	// answered 407 (SOCKS5: no acceptable method) and not recorded.
	Token string
}

// Answer is the person's answer about a host outside the run's set.
type Answer int

// The answers. The zero Answer refuses.
const (
	// AnswerDeny refuses the connection and the rest of the run's
	// connections to that host and port.
	AnswerDeny Answer = iota
	// AnswerOnce admits the connection (and those waiting on the same
	// question); the next one asks again.
	AnswerOnce
	// AnswerRun admits the host and port for the rest of the run.
	AnswerRun
)

// String names the answer as the contacts record it.
func (a Answer) String() string {
	switch a {
	case AnswerOnce:
		return "asked-once"
	case AnswerRun:
		return "asked-run"
	default:
		return "asked-deny"
	}
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
