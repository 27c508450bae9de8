package app

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// AuditPath is --audit, else $SLUICE_AUDIT, else the default.
func AuditPath(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if p := os.Getenv("SLUICE_AUDIT"); p != "" {
		return p, nil
	}
	return audit.DefaultPath()
}

const AuditFlagHelp = "the audit log `FILE` (env SLUICE_AUDIT)"

// DefaultPolicyFile is $XDG_CONFIG_HOME/sluice/policy.toml.
func DefaultPolicyFile() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "sluice", "policy.toml")
}

// OwnPaths are sluice's own files wherever they are configured to be:
// the policy file, the spool and the audit log. Writes to them are denied.
func OwnPaths(policyFile, spool string) []string {
	paths := []string{policyFile, os.Getenv("SLUICE_CONFIG")}
	if spool == "" {
		spool = os.Getenv("SLUICE_SPOOL")
	}
	if spool == "" {
		spool, _ = queue.DefaultDir()
	}
	paths = append(paths, spool)
	if a, err := AuditPath(""); err == nil {
		paths = append(paths, a)
	}
	// Undo's source, and the trust windows: no run may rewrite them.
	paths = append(paths, CheckpointDir(), TrustPath(), TrustPath()+".lock")
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			out = append(out, abs)
		}
	}
	return out
}

// TrustPath is the trust windows' file (policy.TrustStore): beside the
// checkpoints in sluice's state directory, so that every engine on the
// machine and 'sluice trust' see the same trusts.
func TrustPath() string { return filepath.Join(filepath.Dir(CheckpointDir()), "trust.json") }

// defaultHistory is how many past requests the console shows from the
// audit log at start ([console] history).
const defaultHistory = 200

// HomeShort writes a path under the home directory as ~/….
func HomeShort(p string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || home == "/" {
		return p
	}
	if p == home {
		return "~"
	}
	if rest, ok := strings.CutPrefix(p, home+"/"); ok {
		return "~/" + rest
	}
	return p
}

// TrustExpiry is how often an engine ends the trusts whose time is up.
const TrustExpiry = 5 * time.Second
