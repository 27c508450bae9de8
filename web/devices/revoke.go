package devices

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// DefaultDir is the web approver's state directory when none is given:
// web under sluice's state directory (queue.StateDir).
func DefaultDir() (string, error) {
	base, err := queue.StateDir()
	if err != nil {
		return "", fmt.Errorf("devices: no state directory: give --state or set HOME: %w", err)
	}
	return filepath.Join(base, "web"), nil
}

// RevokeAs removes the device named name, as actor, and records it in the
// audit log through rec (queue.EventWebRevoked, the device's id, a reason
// naming it): what 'sluice web revoke' and the console both do. The
// device goes first: an audit log that cannot be written never keeps a
// device paired. Then it returns the device with an error saying the log
// did not take it.
func (s *Store) RevokeAs(name, actor string, rec queue.Recorder) (*Device, error) {
	dev, err := s.Revoke(name)
	if err != nil {
		return nil, err
	}
	ev := queue.Event{ID: dev.ID, Event: queue.EventWebRevoked, Actor: actor,
		Reason: fmt.Sprintf("device %s revoked (paired %s)", dev.Name, dev.PairedAt.Format(time.RFC3339))}
	if err := rec.Record(ev); err != nil {
		return dev, fmt.Errorf("devices: %s is revoked, but the audit log did not take it: %w", name, err)
	}
	return dev, nil
}
