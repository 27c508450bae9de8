package web

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/sluice-dev/sluice/queue"
)

//go:embed static
var static embed.FS

// Defaults of the server's options.
const (
	// DefaultGrace is how long a request must have been on a device
	// before its approval is taken: the console's longest grace (its
	// approve keys wait 425 ms of quiet, at most 1.5 s), since a page
	// cannot see what a person does meanwhile.
	DefaultGrace = 1500 * time.Millisecond
	// DefaultSessionTTL is how long a paired device stays paired.
	DefaultSessionTTL = 30 * 24 * time.Hour
)

// Options configure a Server.
type Options struct {
	// Person is who the devices belong to, as the audit log names people
	// (audit.Login): a decision is recorded as "PERSON@DEVICE (via web)".
	Person string
	// Grace: an approval is taken only for a request served to the device
	// at least this long before (DefaultGrace).
	Grace time.Duration
	// SessionTTL: how long a pairing lasts (DefaultSessionTTL).
	SessionTTL time.Duration
	// Secure marks cookies Secure: the page is reached over TLS (the
	// server's own, or a proxy's when URL is https).
	Secure bool
	// URL is the address people open (web_url), for links; its origin
	// is trusted for POSTs too (a TLS proxy in front).
	URL string
	// Loopback: the listener is loopback without TLS, so only loopback
	// host names are answered (no DNS rebinding to 127.0.0.1).
	Loopback bool
	// RequirePasskey (web_require_passkey): approving a destructive run,
	// or one whose verdict is not recorded, needs a user-verified
	// assertion from a passkey of the device.
	RequirePasskey bool
	// RPID and RPOrigins make the server a WebAuthn relying party: the
	// page's host name (localhost for a loopback page) and its origins.
	// Empty: no passkeys.
	RPID      string
	RPOrigins []string
	// Record appends an audit event (pairing); nil records nothing.
	Record func(queue.Event) error
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logf reports what goes wrong; default: nothing.
	Logf func(format string, args ...any)
}

// Server is the web approver's HTTP side.
type Server struct {
	src   Source
	store *Store
	opt   Options
	cop   *http.CrossOriginProtection
	mux   *http.ServeMux
	pk    *passkeys // nil without a relying party

	mu     sync.Mutex
	served map[string]map[string]*served // device id → request id → what it was shown
}

// served is a request as it was sent to one device: what an approval from
// that device must name.
type served struct {
	kind   queue.Kind
	digest string // the request file's
	diff   string // SHA-256 of the diff shown (file requests), or of its error
	view   string // a random token the approval carries, good once
	at     time.Time
	used   bool
	assert *webauthn.SessionData // the passkey challenge for this showing
}

// NewServer returns the server of src, with devices in store. It fails
// only for passkey settings WebAuthn refuses.
func NewServer(src Source, store *Store, opt Options) (*Server, error) {
	if opt.Grace <= 0 {
		opt.Grace = DefaultGrace
	}
	if opt.SessionTTL <= 0 {
		opt.SessionTTL = DefaultSessionTTL
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	if opt.Person == "" {
		opt.Person = "someone"
	}
	s := &Server{src: src, store: store, opt: opt, served: map[string]map[string]*served{},
		cop: http.NewCrossOriginProtection()}
	if u, err := url.Parse(opt.URL); err == nil && u.Scheme != "" && u.Host != "" {
		_ = s.cop.AddTrustedOrigin(u.Scheme + "://" + u.Host)
	}
	if opt.RPID != "" {
		pk, err := newPasskeys(opt.RPID, opt.RPOrigins)
		if err != nil {
			return nil, err
		}
		s.pk = pk
	} else if opt.RequirePasskey {
		return nil, errors.New("web: passkeys need the page's address: give --url (or listen on loopback)")
	}
	s.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, http.StatusForbidden, "refused: a request from another site")
	}))
	mux := http.NewServeMux()
	sub, _ := fs.Sub(static, "static")
	files := http.FileServerFS(sub)
	mux.Handle("GET /static/", http.StripPrefix("/static/", files))
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /api/session", s.session)
	mux.HandleFunc("POST /api/pair", s.pair)
	mux.HandleFunc("GET /api/queue", s.device(s.queueJSON))
	mux.HandleFunc("GET /api/history", s.device(s.historyJSON))
	mux.HandleFunc("GET /api/request/{id}", s.device(s.detail))
	mux.HandleFunc("POST /api/request/{id}/approve", s.device(s.approve))
	mux.HandleFunc("POST /api/request/{id}/deny", s.device(s.deny))
	mux.HandleFunc("GET /api/events", s.device(s.events))
	mux.HandleFunc("GET /api/output/{id}", s.device(s.output))
	mux.HandleFunc("POST /api/passkey/register/begin", s.device(s.registerBegin))
	mux.HandleFunc("POST /api/passkey/register/finish", s.device(s.registerFinish))
	mux.HandleFunc("POST /api/request/{id}/passkey", s.device(s.assertBegin))
	s.mux = mux
	return s, nil
}

// ServeHTTP implements http.Handler: the headers every answer carries,
// the host check, then, for anything but GET and HEAD, the cross-origin
// check before any handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if s.opt.Loopback && !loopbackHost(r.Host) && !s.urlHost(r.Host) {
		writeErr(w, http.StatusMisdirectedRequest, "refused: this server answers loopback names only (localhost, 127.0.0.1, [::1])")
		return
	}
	s.cop.Handler(s.mux).ServeHTTP(w, r)
}

func (s *Server) urlHost(host string) bool {
	u, err := url.Parse(s.opt.URL)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	data, err := static.ReadFile("static/index.html")
	if err != nil {
		http.Error(w, "no page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(data)
}

// The cookies.
const (
	sessionCookie = "sluice_session"
	preCookie     = "sluice_pre" // the pairing form's CSRF pair, before a device has a session
	csrfHeader    = "X-Sluice-CSRF"
)

type ctxKey struct{}

// device wraps a handler that needs a paired device: no cookie, an unknown
// or revoked device, or an expired session is refused; a POST must also
// carry the session's CSRF token.
func (s *Server) device(h func(http.ResponseWriter, *http.Request, *Device)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(sessionCookie)
		if err != nil {
			writeErr(w, http.StatusUnauthorized, "this browser is not paired: run 'sluice web pair' on the box")
			return
		}
		dev, err := s.store.Session(c.Value, s.opt.Now())
		if err != nil {
			if !errors.Is(err, ErrNoDevice) {
				s.opt.Logf("%v", err)
			}
			writeErr(w, http.StatusUnauthorized, "this browser's pairing is not valid (revoked or expired): pair it again with 'sluice web pair'")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !tokenOK(r.Header.Get(csrfHeader), csrfFor(c.Value)) {
			writeErr(w, http.StatusForbidden, "refused: no valid CSRF token")
			return
		}
		if err := s.store.Seen(dev, s.opt.Now()); err != nil { // for 'sluice web devices' and the console
			s.opt.Logf("last seen: %v", err)
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, dev)), dev)
	}
}

// csrfFor is the CSRF token of a cookie value: a hash of the secret, which
// a page of another origin can neither read nor work out.
func csrfFor(cookie string) string {
	sum := sha256.Sum256([]byte("sluice-web csrf\x00" + cookie))
	return hex.EncodeToString(sum[:])
}

func tokenOK(got, want string) bool {
	return len(got) == len(want) && got != "" && constEq(got, want)
}

func constEq(a, b string) bool {
	var v byte
	for i := 0; i < len(a); i++ {
		v |= a[i] ^ b[i]
	}
	return v == 0
}

// cookie sets a cookie the way every cookie here is set: HttpOnly,
// SameSite=Strict, Secure where the page is reached over TLS.
func (s *Server) cookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: s.opt.Secure || r.TLS != nil, MaxAge: int(maxAge / time.Second)})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	// encoding/json escapes <, > and & in strings: nothing in an answer
	// reads as markup even where it is misread as HTML.
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// by is the name a decision from dev is recorded under.
func (s *Server) by(dev *Device) string {
	return fmt.Sprintf("%s@%s (via web)", s.opt.Person, dev.Name)
}
