package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/sluice-dev/sluice/queue"
)

// EventPasskey is the audit event of a passkey added to a paired device
// (web_require_passkey): id is the device's, reason names it.
const EventPasskey = queue.EventWebPasskey

// passkeys is the WebAuthn relying party: a device may hold passkeys, and
// with Options.RequirePasskey an approval of a destructive run (or of one
// whose verdict is not recorded) needs a user-verified assertion from one
// of them, made for that showing of that request.
type passkeys struct {
	wa *webauthn.WebAuthn

	mu  sync.Mutex
	reg map[string]*webauthn.SessionData // device id → its registration under way
}

func newPasskeys(rpID string, origins []string) (*passkeys, error) {
	wa, err := webauthn.New(&webauthn.Config{RPID: rpID, RPDisplayName: "sluice", RPOrigins: origins})
	if err != nil {
		return nil, fmt.Errorf("web: passkeys: %w", err)
	}
	return &passkeys{wa: wa, reg: map[string]*webauthn.SessionData{}}, nil
}

// user is a device as WebAuthn sees it.
type user struct{ d *Device }

func (u user) WebAuthnID() []byte                         { return []byte(u.d.ID) }
func (u user) WebAuthnName() string                       { return u.d.Name }
func (u user) WebAuthnDisplayName() string                { return u.d.Name }
func (u user) WebAuthnCredentials() []webauthn.Credential { return credentials(u.d) }

// credentials are the device's passkeys, decoded from the store's JSON;
// one that does not decode is left out (it can then assert nothing).
func credentials(d *Device) []webauthn.Credential {
	var out []webauthn.Credential
	for _, raw := range d.Passkeys {
		var c webauthn.Credential
		if json.Unmarshal(raw, &c) == nil {
			out = append(out, c)
		}
	}
	return out
}

// needsPasskey says whether approving it needs a passkey assertion.
func (s *Server) needsPasskey(it *Item) bool {
	if !s.opt.RequirePasskey {
		return false
	}
	v := it.Verdict
	return v == nil || v.Category == "destructive"
}

// registerBegin starts adding a passkey to the device.
func (s *Server) registerBegin(w http.ResponseWriter, r *http.Request, dev *Device) {
	if s.pk == nil {
		writeErr(w, http.StatusNotFound, "passkeys are not set up on this server (give it --url, or open it as localhost)")
		return
	}
	var excl []protocol.CredentialDescriptor
	for _, c := range credentials(dev) {
		excl = append(excl, c.Descriptor())
	}
	opts, sess, err := s.pk.wa.BeginRegistration(user{dev},
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{
			ResidentKey: protocol.ResidentKeyRequirementPreferred, UserVerification: protocol.VerificationRequired}),
		webauthn.WithExclusions(excl))
	if err != nil {
		writeErr(w, http.StatusInternalServerError, Plain(err.Error(), 200))
		return
	}
	s.pk.mu.Lock()
	s.pk.reg[dev.ID] = sess
	s.pk.mu.Unlock()
	writeJSON(w, http.StatusOK, opts)
}

// registerFinish stores the passkey the browser made. Audited.
func (s *Server) registerFinish(w http.ResponseWriter, r *http.Request, dev *Device) {
	if s.pk == nil {
		writeErr(w, http.StatusNotFound, "no passkeys here")
		return
	}
	s.pk.mu.Lock()
	sess := s.pk.reg[dev.ID]
	delete(s.pk.reg, dev.ID)
	s.pk.mu.Unlock()
	if sess == nil {
		writeErr(w, http.StatusConflict, "no passkey registration under way")
		return
	}
	parsed, err := protocol.ParseCredentialCreationResponseBody(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		writeErr(w, http.StatusBadRequest, "not a passkey: "+Plain(err.Error(), 200))
		return
	}
	cred, err := s.pk.wa.CreateCredential(user{dev}, *sess, parsed)
	if err != nil {
		writeErr(w, http.StatusForbidden, "passkey refused: "+Plain(err.Error(), 200))
		return
	}
	raw, err := json.Marshal(cred)
	if err == nil {
		err = s.store.AddPasskey(dev.ID, raw)
	}
	if err != nil {
		s.opt.Logf("passkey: %v", err)
		writeErr(w, http.StatusInternalServerError, "the passkey could not be stored")
		return
	}
	if s.opt.Record != nil {
		if err := s.opt.Record(queue.Event{ID: dev.ID, Event: EventPasskey, Actor: dev.By,
			Reason: "device " + dev.Name + " added a passkey"}); err != nil {
			s.opt.Logf("audit %s: %v", EventPasskey, err)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// assertBegin asks the device's passkey to confirm one showing of a
// request: the challenge is bound to that showing's view token.
func (s *Server) assertBegin(w http.ResponseWriter, r *http.Request, dev *Device) {
	id := r.PathValue("id")
	in, ok := readDecision(r)
	if !ok {
		writeErr(w, http.StatusBadRequest, "bad request")
		return
	}
	if s.pk == nil || len(dev.Passkeys) == 0 {
		writeErr(w, http.StatusConflict, "this device has no passkey: add one first")
		return
	}
	opts, sess, err := s.pk.wa.BeginLogin(user{dev}, webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		writeErr(w, http.StatusInternalServerError, Plain(err.Error(), 200))
		return
	}
	s.mu.Lock()
	sv := s.served[dev.ID][id]
	if sv == nil || !tokenOK(in.View, sv.view) || sv.used {
		s.mu.Unlock()
		writeErr(w, http.StatusForbidden, "refused: this request was not shown to this device; open it first")
		return
	}
	sv.assert = sess
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, opts)
}

// checkAssertion verifies a passkey assertion for a showing: made for its
// challenge, by one of the device's passkeys, with the person verified.
func (s *Server) checkAssertion(dev *Device, sess *webauthn.SessionData, raw json.RawMessage) error {
	if s.pk == nil || sess == nil || len(raw) == 0 {
		return errors.New("this approval needs the device's passkey")
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(raw)
	if err != nil {
		return fmt.Errorf("not a passkey assertion: %w", err)
	}
	if !sess.Expires.IsZero() && time.Now().After(sess.Expires) {
		return errors.New("the passkey request expired; try again")
	}
	cred, err := s.pk.wa.ValidateLogin(user{dev}, *sess, parsed)
	if err != nil {
		return fmt.Errorf("passkey refused: %w", err)
	}
	if !cred.Flags.UserVerified {
		return errors.New("passkey refused: the person was not verified")
	}
	return nil
}
