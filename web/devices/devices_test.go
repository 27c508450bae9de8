package devices

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

type events []queue.Event

func (e *events) Record(ev queue.Event) error { *e = append(*e, ev); return nil }

type broken struct{}

func (broken) Record(queue.Event) error { return errors.New("disk full") }

// pair pairs a device called name on s and returns it with its cookie.
func pair(t *testing.T, s *Store, name string, now time.Time) (*Device, string) {
	t.Helper()
	code, err := s.NewCode(name, "alice", now)
	if err != nil {
		t.Fatal(err)
	}
	d, cookie, err := s.Pair(code, "Mozilla/5.0 \x1b[31mred", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	return d, cookie
}

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// What 'sluice web revoke' and the console share: the device is gone for
// every process on the directory at its next look, and the audit log gets
// web_revoked naming the device and the person.
func TestRevokeAs(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "web")
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	server := open(t, dir)
	phone, cookie := pair(t, server, "phone", now)
	laptop, laptopCookie := pair(t, server, "laptop", now)
	if _, err := server.Session(cookie, now); err != nil { // the server has read the file
		t.Fatal(err)
	}

	var log events
	console := open(t, dir) // another process
	gone, err := console.RevokeAs("phone", "bob", &log)
	if err != nil || gone.ID != phone.ID {
		t.Fatalf("RevokeAs: %v %v", gone, err)
	}
	if len(log) != 1 {
		t.Fatalf("events: %+v", log)
	}
	ev := log[0]
	if ev.Event != queue.EventWebRevoked || ev.ID != phone.ID || ev.Actor != "bob" || !strings.Contains(ev.Reason, "device phone revoked") {
		t.Errorf("the audit event: %+v", ev)
	}
	if _, err := server.Session(cookie, now); !errors.Is(err, ErrNoDevice) {
		t.Errorf("the revoked device's session: %v", err)
	}
	if d, err := server.Session(laptopCookie, now); err != nil || d.ID != laptop.ID {
		t.Errorf("the other device after the revocation: %v %v", d, err)
	}
	if _, err := console.RevokeAs("phone", "bob", &log); !errors.Is(err, ErrNoDevice) || len(log) != 1 {
		t.Errorf("revoking it again: %v, %d events", err, len(log))
	}

	// The log refuses: the device is revoked all the same, and the
	// caller is told.
	gone, err = console.RevokeAs("laptop", "bob", broken{})
	if gone == nil || err == nil || !strings.Contains(err.Error(), "audit log did not take it") {
		t.Fatalf("with a broken log: %v %v", gone, err)
	}
	if _, err := server.Session(laptopCookie, now); !errors.Is(err, ErrNoDevice) {
		t.Errorf("a device whose revocation the log refused still works: %v", err)
	}
}

// Last seen: written when a device comes back after SeenEvery, not at
// every request; never bringing back a device revoked meanwhile.
func TestSeen(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "web")
	now := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	s := open(t, dir)
	_, cookie := pair(t, s, "phone", now)
	devs, _ := s.Devices()
	if !devs[0].LastSeen.Equal(now) {
		t.Fatalf("last seen at pairing: %v", devs[0].LastSeen)
	}
	if strings.Contains(devs[0].UserAgent, "\x1b") {
		t.Errorf("the user agent is stored with its escape: %q", devs[0].UserAgent)
	}
	stat := func() time.Time {
		fi, err := os.Stat(filepath.Join(dir, devicesFile))
		if err != nil {
			t.Fatal(err)
		}
		return fi.ModTime()
	}
	d, _ := s.Session(cookie, now)
	before := stat()
	if err := s.Seen(d, now.Add(SeenEvery/2)); err != nil {
		t.Fatal(err)
	}
	if !stat().Equal(before) {
		t.Error("devices.json was rewritten for a device seen within SeenEvery")
	}
	later := now.Add(3 * SeenEvery)
	if err := s.Seen(d, later); err != nil {
		t.Fatal(err)
	}
	devs, _ = open(t, dir).Devices()
	if !devs[0].LastSeen.Equal(later) {
		t.Errorf("last seen: %v, want %v", devs[0].LastSeen, later)
	}

	if _, err := s.Revoke("phone"); err != nil {
		t.Fatal(err)
	}
	if err := s.Seen(d, later.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if devs, _ = s.Devices(); len(devs) != 0 {
		t.Errorf("Seen brought a revoked device back: %+v", devs)
	}
}

// Passkeys are kept as the server wrote them, byte for byte in meaning.
func TestPasskeysKept(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "web")
	now := time.Now()
	s := open(t, dir)
	d, _ := pair(t, s, "phone", now)
	cred := json.RawMessage(`{"id":"AQID","publicKey":"BAUG","flags":{"userVerified":true}}`)
	if err := s.AddPasskey(d.ID, cred); err != nil {
		t.Fatal(err)
	}
	if err := s.AddPasskey("nobody", cred); !errors.Is(err, ErrNoDevice) {
		t.Errorf("a passkey for no device: %v", err)
	}
	devs, _ := open(t, dir).Devices()
	if len(devs) != 1 || len(devs[0].Passkeys) != 1 {
		t.Fatalf("devices: %+v", devs)
	}
	var got, want any
	_ = json.Unmarshal(devs[0].Passkeys[0], &got)
	_ = json.Unmarshal(cred, &want)
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("the passkey came back as %s, want %s", g, w)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A devices.json that is not what this package wrote is an error, never
// a panic, and pairs nothing.
func TestHostileFile(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"", "{", "[1,2]", `[{"id":7}]`, `{"name":"phone"}`, "null", strings.Repeat("[", 10000)} {
		dir := filepath.Join(t.TempDir(), "web")
		s := open(t, dir)
		if err := os.WriteFile(filepath.Join(dir, devicesFile), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Session("abc."+strings.Repeat("x", 43), time.Now()); err == nil {
			t.Errorf("%q: a session", text)
		}
		_, _ = s.Devices()
		_, _ = s.RevokeAs("phone", "bob", &events{})
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/tmp/st")
	if d, err := DefaultDir(); err != nil || d != "/tmp/st/sluice/web" {
		t.Errorf("DefaultDir: %q %v", d, err)
	}
}
