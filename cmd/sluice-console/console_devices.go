package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/tui"
	"github.com/sluice-dev/sluice/web/devices"
)

// webDevices are the web approver's devices as the console lists and
// revokes them (W): the store 'sluice web' uses, and the audit event
// 'sluice web revoke' records.
type webDevices struct {
	dir   string         // the web approver's state directory
	rec   queue.Recorder // the audit log
	actor string
}

// newWebDevices is the default state directory's devices, revoked into
// rec as actor.
func newWebDevices(rec queue.Recorder, actor string) *webDevices {
	dir, err := devices.DefaultDir()
	if err != nil {
		dir = "" // no home: listing says so
	}
	return &webDevices{dir: dir, rec: rec, actor: actor}
}

// store opens the state directory; nil, without making it, when no
// device was ever paired here.
func (w *webDevices) store() (*devices.Store, error) {
	if w.dir == "" {
		_, err := devices.DefaultDir()
		return nil, err
	}
	if _, err := os.Lstat(w.dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return devices.Open(w.dir)
}

// WebDevices implements tui.WebDevices.
func (w *webDevices) WebDevices() ([]tui.WebDevice, error) {
	st, err := w.store()
	if st == nil || err != nil {
		return nil, err
	}
	devs, err := st.Devices()
	if err != nil {
		return nil, err
	}
	out := make([]tui.WebDevice, 0, len(devs))
	for _, d := range devs {
		out = append(out, tui.WebDevice{Name: d.Name, By: d.By, Browser: d.UserAgent,
			PairedAt: d.PairedAt, LastSeen: d.LastSeen, ExpiresAt: d.ExpiresAt})
	}
	return out, nil
}

// RevokeWebDevice implements tui.WebDevices.
func (w *webDevices) RevokeWebDevice(name string) error {
	st, err := w.store()
	if err != nil {
		return err
	}
	if st == nil {
		return devices.ErrNoDevice
	}
	_, err = st.RevokeAs(name, w.actor, w.rec)
	return err
}

// auditFile is an audit log opened for each event: the fleet console
// has no log of its own open, and revokes into the one 'sluice web
// revoke' would use ($SLUICE_AUDIT, else sluice's default).
type auditFile struct{}

// Record implements queue.Recorder.
func (auditFile) Record(ev queue.Event) error {
	path := os.Getenv("SLUICE_AUDIT")
	if path == "" {
		p, err := audit.DefaultPath()
		if err != nil {
			return err
		}
		path = p
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	l, err := audit.Open(path)
	if err != nil {
		return err
	}
	defer l.Close()
	return l.Record(ev)
}
