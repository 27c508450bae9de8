package tui

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// fakeDevices are web devices in memory.
type fakeDevices struct {
	mu      sync.Mutex
	devs    []WebDevice
	revoked []string
	fail    error
}

func (f *fakeDevices) WebDevices() ([]WebDevice, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]WebDevice(nil), f.devs...), nil
}

func (f *fakeDevices) RevokeWebDevice(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = append(f.revoked, name)
	return f.fail
}

func devicesFixture(t *testing.T) (*fixture, *fakeDevices) {
	t.Helper()
	f := newFixture(t)
	now := f.clock.now()
	fd := &fakeDevices{devs: []WebDevice{
		{Name: "phone", By: "alice", PairedAt: now.Add(-48 * time.Hour), LastSeen: now.Add(-5 * time.Minute), ExpiresAt: now.Add(time.Hour),
			Browser: "Mozilla/5.0 (iPhone)"},
		{Name: "laptop", By: "alice", PairedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)},
	}}
	f.m.d.opt.Devices = fd
	return f, fd
}

// W lists the paired devices with when each was paired and last seen;
// one is revoked only after y in a second dialog.
func TestWebDevicesRevoke(t *testing.T) {
	t.Parallel()
	f, fd := devicesFixture(t)
	km := f.m.keys
	f.run(f.press(km.WebDevices))
	if !isOpen[*webDevicesDialog](f.m) {
		t.Fatalf("W opened %s", state(f.m))
	}
	screen := ansi.Strip(f.m.render())
	for _, want := range []string{"Web devices (2 paired)", "phone", "seen 5m ago", "laptop", "not seen since", "expired", "iPhone"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the list lacks %q:\n%s", want, screen)
		}
	}

	// Down to the laptop, enter asks; enter again does not revoke.
	f.press(km.Down)
	f.press(km.Submit)
	if d := dialogOf[*revokeWebDeviceDialog](f.m); d == nil || d.dev.Name != "laptop" {
		t.Fatalf("enter opened %s", state(f.m))
	}
	if !strings.Contains(ansi.Strip(f.m.render()), "Revoke the web device laptop?") {
		t.Error("the confirmation does not name the device")
	}
	f.run(f.press(km.Submit))
	if len(fd.revoked) != 0 || f.m.dlg != nil || f.m.status != "not revoked" {
		t.Fatalf("enter twice: revoked %v, %s, status %q", fd.revoked, state(f.m), f.m.status)
	}

	// Esc in the list, then in the confirmation: nothing revoked.
	f.run(f.press(km.WebDevices))
	f.press(km.No)
	if f.m.dlg != nil || len(fd.revoked) != 0 {
		t.Fatalf("esc in the list: %s, revoked %v", state(f.m), fd.revoked)
	}

	// W, enter (the phone, first), y: revoked, and said.
	f.run(f.press(km.WebDevices))
	f.press(km.Submit)
	f.run(f.press(km.Yes))
	if strings.Join(fd.revoked, ",") != "phone" {
		t.Fatalf("revoked %v, want phone", fd.revoked)
	}
	if f.m.statusErr || !strings.Contains(f.m.status, "revoked phone") {
		t.Errorf("status after revoking: %q", f.m.status)
	}

	// A revocation the audit log refused is an error in the status line.
	fd.fail = errors.New("devices: laptop is revoked, but the audit log did not take it: disk full")
	f.run(f.press(km.WebDevices))
	f.press(km.Down)
	f.press(km.Submit)
	f.run(f.press(km.Yes))
	if !f.m.statusErr || !strings.Contains(f.m.status, "audit log did not take it") {
		t.Errorf("status after a refused audit: %q", f.m.status)
	}
}

// A device's name and browser come from a file: they are shown inert.
func TestWebDevicesHostileText(t *testing.T) {
	t.Parallel()
	f, fd := devicesFixture(t)
	fd.devs[0].Name = "ph\x1b[2Jone"
	fd.devs[0].Browser = "evil\x1b]52;c;AAAA\x07\u202e"
	f.run(f.press(f.m.keys.WebDevices))
	out := f.m.render()
	if strings.Contains(out, "\x1b[2J") || strings.Contains(out, "\x1b]52") || strings.Contains(out, "\u202e") {
		t.Errorf("escape sequences reach the terminal: %q", out)
	}
}

// Without a web approver W says so; no devices, the dialog says how to
// pair one.
func TestWebDevicesNone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if cmd := f.press(f.m.keys.WebDevices); cmd != nil || !f.m.statusErr {
		t.Errorf("W with no devices store: cmd %v, status %q", cmd != nil, f.m.status)
	}
	fd := &fakeDevices{}
	f.m.d.opt.Devices = fd
	f.run(f.press(f.m.keys.WebDevices))
	if !strings.Contains(ansi.Strip(f.m.render()), "sluice web pair NAME") {
		t.Errorf("no devices:\n%s", ansi.Strip(f.m.render()))
	}
	f.run(f.press(f.m.keys.Submit))
	if f.m.dlg != nil || len(fd.revoked) != 0 {
		t.Errorf("enter on an empty list: %s, revoked %v", state(f.m), fd.revoked)
	}
}
