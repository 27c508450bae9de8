package audit

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
)

var loginOnce = sync.OnceValue(func() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	for _, k := range []string{"USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "uid " + strconv.Itoa(os.Getuid())
})

// login is the name the log records as the actor of its own lines.
func login() string { return loginOnce() }

// DefaultPath returns the audit log of SPEC section 2 for the current
// environment: $XDG_STATE_HOME/sluice/audit.jsonl, else
// ~/.local/state/sluice/audit.jsonl.
func DefaultPath() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "sluice", "audit.jsonl"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("audit: no audit log path: set SLUICE_AUDIT or HOME: %w", err)
	}
	return filepath.Join(home, ".local", "state", "sluice", "audit.jsonl"), nil
}
