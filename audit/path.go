package audit

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/sluice-dev/sluice/queue"
)

// Login returns the name the log records for the person acting: the user
// name of this process's uid in /etc/passwd, else $USER or $LOGNAME, else
// "uid N". It does not use os/user, which links cgo into every sluice
// process and costs each one about 2 ms to start.
var Login = sync.OnceValue(func() string {
	uid := strconv.Itoa(os.Getuid())
	if f, err := os.Open("/etc/passwd"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Split(sc.Text(), ":")
			if len(fields) > 2 && fields[2] == uid && fields[0] != "" {
				return fields[0]
			}
		}
	}
	for _, k := range []string{"USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "uid " + uid
})

// login is the name the log records as the actor of its own lines.
func login() string { return Login() }

// DefaultPath returns the audit log of protocol section 2 for the current
// environment: $XDG_STATE_HOME/sluice/audit.jsonl, else
// ~/.local/state/sluice/audit.jsonl.
func DefaultPath() (string, error) {
	state, err := queue.StateDir()
	if err != nil {
		return "", fmt.Errorf("audit: no audit log path: set SLUICE_AUDIT or HOME: %w", err)
	}
	return filepath.Join(state, "audit.jsonl"), nil
}
