package web

import "github.com/sluice-dev/sluice/web/devices"

// The paired devices live in package devices, which the console shares
// (it lists and revokes them without linking this web server); these
// names keep the server's code as it was.
type (
	// Device is devices.Device.
	Device = devices.Device
	// Store is devices.Store.
	Store = devices.Store
)

// Errors callers branch on (devices').
var (
	ErrNoCode      = devices.ErrNoCode
	ErrCodeExpired = devices.ErrCodeExpired
	ErrCodeSpent   = devices.ErrCodeSpent
	ErrWrongCode   = devices.ErrWrongCode
	ErrNoDevice    = devices.ErrNoDevice
)

// Pairing limits (devices').
const (
	CodeTTL   = devices.CodeTTL
	CodeTries = devices.CodeTries
)

// ValidName reports whether s may name a device (devices.ValidName).
func ValidName(s string) bool { return devices.ValidName(s) }

// NormalizeCode takes a code as typed (devices.NormalizeCode).
func NormalizeCode(s string) string { return devices.NormalizeCode(s) }

// OpenStore opens the state directory dir (devices.Open).
func OpenStore(dir string) (*Store, error) { return devices.Open(dir) }
