package devices

import "time"

// SeenEvery is how often a device's LastSeen is written while it keeps
// reaching the server: a page polling every second rewrites devices.json
// once a minute, not every second.
const SeenEvery = time.Minute

// Seen notes that d, as Session returned it, reached the server at now.
// It writes only when d's LastSeen is SeenEvery old or more, and never
// brings back a device revoked meanwhile.
func (s *Store) Seen(d *Device, now time.Time) error {
	if now.Sub(d.LastSeen) < SeenEvery {
		return nil
	}
	return s.locked(func() error {
		var devs []Device
		if _, err := s.readJSON(devicesFile, &devs); err != nil {
			return err
		}
		for i := range devs {
			if devs[i].ID == d.ID {
				devs[i].LastSeen = now.UTC()
				return s.writeJSON(devicesFile, devs)
			}
		}
		return nil // revoked meanwhile
	})
}
