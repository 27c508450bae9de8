package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// configWatch follows config.toml while an engine serves: a change is
// read again; a good file is applied, a broken one is reported and the
// last good configuration stays in force.
type configWatch struct {
	flagValue string        // --config, as given
	every     time.Duration // how often to look; 1 s if zero
	// apply is given each good new configuration (and the one it
	// replaces); problem is given why a changed file does not load, or
	// nil once a good one loads again.
	apply   func(old, new *config)
	problem func(error)
}

// start watches, from a goroutine, until ctx ends; cur is the
// configuration in force, read from the file as it is now.
func (w *configWatch) start(ctx context.Context, cur *config) {
	path, _ := configPath(w.flagValue)
	if path == "" {
		return
	}
	go w.run(ctx, path, statStamp(path), cur)
}

func (w *configWatch) run(ctx context.Context, path string, last stamp, cur *config) {
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
		c, err := loadConfig(w.flagValue)
		if err != nil {
			broken = true
			w.problem(err)
			continue
		}
		if broken {
			broken = false
			w.problem(nil)
		}
		w.apply(cur, c)
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
func restartOnly(old, new *config) []string {
	var out []string
	if old.maxAuto() != new.maxAuto() {
		out = append(out, "max_auto")
	}
	if old.Console.Theme != new.Console.Theme {
		out = append(out, "[console] theme")
	}
	if old.Console.history() != new.Console.history() {
		out = append(out, "[console] history")
	}
	return out
}

// reloadedText says a configuration was reloaded, and what waits for a
// restart.
func reloadedText(path string, old, new *config) string {
	s := "configuration reloaded from " + homeShort(path)
	if path == "" {
		s = "configuration file removed: the defaults are in force"
	}
	if later := restartOnly(old, new); len(later) > 0 {
		slices.Sort(later)
		s += fmt.Sprintf(" (%s: at the next start)", strings.Join(later, ", "))
	}
	return s
}
