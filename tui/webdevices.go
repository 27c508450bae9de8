package tui

import (
	"fmt"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// The web approver's devices (W): the browsers paired with 'sluice web
// pair', listed with when each was paired and last seen; one is revoked
// after a confirmation, as 'sluice web revoke' does it.

// listWebDevicesCmd reads the paired devices off the UI goroutine.
func (m *Model) listWebDevicesCmd() tea.Cmd {
	devs := m.d.opt.Devices
	return func() tea.Msg {
		list, err := devs.WebDevices()
		return webDevicesMsg{devs: list, err: err}
	}
}

// revokeWebDeviceCmd revokes the device called name.
func (m *Model) revokeWebDeviceCmd(name string) tea.Cmd {
	devs := m.d.opt.Devices
	m.d.wg.Add(1)
	return func() tea.Msg {
		defer m.d.wg.Done()
		return webDeviceRevokedMsg{name: name, err: devs.RevokeWebDevice(name)}
	}
}

// webDevicesRead opens the list, unless the person moved on to another
// dialog, the help or the filter while it was read.
func (m *Model) webDevicesRead(msg webDevicesMsg) {
	switch {
	case msg.err != nil:
		m.setErr(fmt.Errorf("web devices: %w", msg.err))
	case m.mode == modeNormal && m.dlg == nil:
		m.open(&webDevicesDialog{devs: msg.devs})
		m.status = ""
	}
}

// webDevicesDialog lists the paired devices (W).
type webDevicesDialog struct {
	devs []WebDevice
	sel  int
}

// Render implements dialog.
func (d *webDevicesDialog) Render(m *Model, inner int) (string, []string) {
	ds := m.st.Dialog
	if len(d.devs) == 0 {
		return "Web devices", []string{ds.Text.Render("No browser is paired with the web approver; 'sluice web pair NAME' pairs one."),
			"", noButton(m)}
	}
	now := m.d.now()
	var body []string
	for i, dv := range d.devs {
		seen := "not seen since"
		if !dv.LastSeen.IsZero() {
			seen = "seen " + ago(now, dv.LastSeen)
		}
		line := fmt.Sprintf("%-12s paired %s, %s", plainText(dv.Name), dv.PairedAt.Local().Format("2006-01-02 15:04"), seen)
		if !now.Before(dv.ExpiresAt) {
			line += ", expired"
		}
		if dv.By != "" {
			line += ", by " + plainText(dv.By)
		}
		line = fit(line, inner-2)
		if i == d.sel {
			body = append(body, ds.ButtonFocused.Render("›")+" "+ds.Text.Bold(true).Render(line))
		} else {
			body = append(body, "  "+ds.Text.Render(line))
		}
	}
	if b := d.devs[d.sel].Browser; b != "" {
		body = append(body, "", ds.Text.Render(plainText(d.devs[d.sel].Name)+": "+plainText(b)))
	}
	body = append(body, "", ds.Button.Render("↑/↓ then enter: revoke")+"  "+noButton(m))
	return fmt.Sprintf("Web devices (%d paired)", len(d.devs)), body
}

// HandleKey implements dialog: ↑ and ↓ choose, enter asks to revoke.
func (d *webDevicesDialog) HandleKey(m *Model, msg tea.KeyPressMsg) (dialog, tea.Cmd) {
	switch {
	case key.Matches(msg, m.keys.Up):
		d.sel = max(0, d.sel-1)
		return d, nil
	case key.Matches(msg, m.keys.Down):
		d.sel = max(0, min(len(d.devs)-1, d.sel+1))
		return d, nil
	case key.Matches(msg, m.keys.Submit) && len(d.devs) > 0:
		return &revokeWebDeviceDialog{dev: d.devs[d.sel]}, nil
	}
	return nil, nil
}

// revokeWebDeviceDialog asks before revoking a device.
type revokeWebDeviceDialog struct{ dev WebDevice }

// Render implements dialog.
func (d *revokeWebDeviceDialog) Render(m *Model, _ int) (string, []string) {
	ds := m.st.Dialog
	name := plainText(d.dev.Name)
	return "Revoke the web device " + name + "?", []string{
		ds.Text.Render("Its open pages lose access within a second, and it can no longer approve or deny."),
		ds.Text.Render("The audit log records it; to use it again, pair it anew with 'sluice web pair " + name + "'."),
		"", ds.Button.Render("y: revoke") + "  " + noButton(m),
	}
}

// HandleKey implements dialog. Only y revokes: the enter that opened this
// dialog, pressed twice, does not.
func (d *revokeWebDeviceDialog) HandleKey(m *Model, msg tea.KeyPressMsg) (dialog, tea.Cmd) {
	if !key.Matches(msg, m.keys.Yes) {
		m.setStatus("not revoked")
		return nil, nil
	}
	m.setStatus("revoking " + plainText(d.dev.Name) + "…")
	return nil, m.revokeWebDeviceCmd(d.dev.Name)
}

// ago says how long before now t was ("just now", "5m ago").
func ago(now, t time.Time) string {
	d := now.Sub(t)
	if d < time.Minute {
		return "just now"
	}
	return age(d) + " ago"
}
