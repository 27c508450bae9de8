package web

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// The audit events of the web approver (protocol section 6): a device
// paired, a device revoked. The id is the device's, the actor the person
// who made the code (paired) or revoked it, the reason names the device.
const (
	EventPaired  = queue.EventWebPaired
	EventRevoked = queue.EventWebRevoked
)

// sessionView is GET /api/session.
type sessionView struct {
	Paired  bool   `json:"paired"`
	Device  string `json:"device,omitempty"`
	As      string `json:"as,omitempty"`
	Expires string `json:"expires,omitempty"`
	CSRF    string `json:"csrf"` // the session's, or, unpaired, the pairing form's
	GraceMS int64  `json:"grace_ms"`
	// Passkeys: how many the device holds; PasskeysOn: the server can
	// take them; RequirePasskey: destructive runs need one.
	Passkeys       int  `json:"passkeys"`
	PasskeysOn     bool `json:"passkeys_on"`
	RequirePasskey bool `json:"require_passkey"`
}

// session tells the page whether this browser is paired, with the CSRF
// token its POSTs carry. An unpaired browser gets a pre-session cookie and
// its token, for the pairing form.
func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	v := sessionView{GraceMS: s.opt.Grace.Milliseconds(), PasskeysOn: s.pk != nil, RequirePasskey: s.opt.RequirePasskey}
	if c, err := r.Cookie(sessionCookie); err == nil {
		if dev, err := s.store.Session(c.Value, s.opt.Now()); err == nil {
			v.Paired, v.Device, v.As, v.CSRF = true, dev.Name, s.by(dev), csrfFor(c.Value)
			v.Passkeys = len(dev.Passkeys)
			v.Expires = dev.ExpiresAt.Format(time.RFC3339)
			writeJSON(w, http.StatusOK, v)
			return
		}
	}
	pre := ""
	if c, err := r.Cookie(preCookie); err == nil && len(c.Value) == 32 {
		pre = c.Value
	} else {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		pre = hex.EncodeToString(b)
		s.cookie(w, r, preCookie, pre, CodeTTL*2)
	}
	v.CSRF = csrfFor("pre\x00" + pre)
	writeJSON(w, http.StatusOK, v)
}

// pair spends a pairing code: the browser becomes a device with its own
// key (the session cookie). Audited.
func (s *Server) pair(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(preCookie)
	if err != nil || !tokenOK(r.Header.Get(csrfHeader), csrfFor("pre\x00"+c.Value)) {
		writeErr(w, http.StatusForbidden, "refused: no valid CSRF token (reload the page)")
		return
	}
	var in struct {
		Code string `json:"code"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&in); err != nil {
		writeErr(w, http.StatusBadRequest, "bad request")
		return
	}
	now := s.opt.Now()
	dev, cookie, err := s.store.Pair(in.Code, r.UserAgent(), s.opt.SessionTTL, now)
	switch {
	case errors.Is(err, ErrWrongCode), errors.Is(err, ErrNoCode), errors.Is(err, ErrCodeExpired), errors.Is(err, ErrCodeSpent):
		writeErr(w, http.StatusForbidden, trimPrefix(err.Error()))
		return
	case err != nil:
		s.opt.Logf("pair: %v", err)
		writeErr(w, http.StatusInternalServerError, "pairing failed; see the server's log")
		return
	}
	if s.opt.Record != nil {
		ev := queue.Event{ID: dev.ID, Event: EventPaired, Actor: dev.By,
			Reason: fmt.Sprintf("device %s paired to approve from the web until %s (%s)", dev.Name,
				dev.ExpiresAt.Format(time.RFC3339), dev.UserAgent)}
		if err := s.opt.Record(ev); err != nil {
			s.opt.Logf("audit %s: %v", EventPaired, err)
		}
	}
	s.cookie(w, r, sessionCookie, cookie, dev.ExpiresAt.Sub(now))
	s.cookie(w, r, preCookie, "", -time.Second)
	writeJSON(w, http.StatusOK, sessionView{Paired: true, Device: dev.Name, As: s.by(dev), CSRF: csrfFor(cookie),
		Expires: dev.ExpiresAt.Format(time.RFC3339), GraceMS: s.opt.Grace.Milliseconds(),
		PasskeysOn: s.pk != nil, RequirePasskey: s.opt.RequirePasskey})
}

// trimPrefix cuts the package's prefix off an error for the page.
func trimPrefix(s string) string {
	for _, p := range []string{"devices: ", "web: "} {
		if len(s) > len(p) && s[:len(p)] == p {
			return s[len(p):]
		}
	}
	return s
}
