package app

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// ConfigWatch follows config.toml while an engine serves: a change is
// read again; a good file is applied, a broken one is reported and the
// last good configuration stays in force.
type ConfigWatch struct {
	FlagValue string        // --config, as given
	every     time.Duration // how often to look; 1 s if zero
	// Apply is given each good new configuration (and the one it
	// replaces); problem is given why a changed file does not load, or
	// nil once a good one loads again.
	Apply   func(old, new *Config)
	Problem func(error)
}

// Start watches, from a goroutine, until ctx ends; cur is the
// configuration in force, read from the file as it is now.
func (w *ConfigWatch) Start(ctx context.Context, cur *Config) {
	path, _ := configPath(w.FlagValue)
	if path == "" {
		return
	}
	go w.run(ctx, path, statStamp(path), cur)
}

func (w *ConfigWatch) run(ctx context.Context, path string, last stamp, cur *Config) {
	every := w.every
	if every <= 0 {
		every = time.Second
	}
	broken := false
	pending := last // the changed stamp seen at the last tick
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		st := statStamp(path)
		if st == last {
			continue
		}
		// Read only a file that has held still for a whole tick: an
		// editor's save (truncate then write, or write then rename) is
		// not caught half done, and a file that vanished for an instant
		// does not put the defaults in force (sandbox = "require" would
		// fall back to "prefer").
		if st != pending {
			pending = st
			continue
		}
		last = st
		c, err := LoadConfig(w.FlagValue)
		if err != nil {
			broken = true
			w.Problem(err)
			continue
		}
		if broken {
			broken = false
			w.Problem(nil)
		}
		w.Apply(cur, c)
		cur = c
	}
}

// stamp is what tells an edited file: its mtime, size and inode.
type stamp struct {
	exists      bool
	mtime, size int64
	ino         uint64
}

func statStamp(path string) stamp {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}
	}
	st := stamp{exists: true, mtime: fi.ModTime().UnixNano(), size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = uint64(sys.Ino)
	}
	return st
}

// restartOnly names the keys that changed between old and new which a
// running engine or console does not take up until it starts again.
func restartOnly(old, new *Config) []string {
	var out []string
	if old.maxAuto() != new.maxAuto() {
		out = append(out, "max_auto")
	}
	if old.Console.Theme != new.Console.Theme {
		out = append(out, "[console] theme")
	}
	if old.Console.HistoryLen() != new.Console.HistoryLen() {
		out = append(out, "[console] history")
	}
	return out
}

// ReloadedText says a configuration was reloaded, and what waits for a
// restart.
func ReloadedText(path string, old, new *Config) string {
	s := "configuration reloaded from " + HomeShort(path)
	if path == "" {
		s = "configuration file removed: the defaults are in force"
	}
	if later := restartOnly(old, new); len(later) > 0 {
		slices.Sort(later)
		s += fmt.Sprintf(" (%s: at the next start)", strings.Join(later, ", "))
	}
	return s
}
