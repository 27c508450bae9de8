package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
	"golang.org/x/sys/unix"
)

func LastLines(f *os.File, n int, filter audit.Filter) ([]audit.Line, int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	return audit.Last(f, fi.Size(), n, filter)
}

func KnownEvent(name queue.EventName) bool {
	for _, e := range queue.EventNames() {
		if e == name {
			return true
		}
	}
	return false
}

func EventList() string {
	names := queue.EventNames()
	s := make([]string, len(names))
	for i, e := range names {
		s[i] = string(e)
	}
	return strings.Join(s, ", ")
}

// ParseSince reads a duration back from now, or a time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q is negative; give how far back to look (30m, 2h)", s)
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither a duration (30m, 2h, 48h) nor a time (2026-11-21T15:04:05Z, 2026-11-21)", Show(s))
}

// TailPrinter prints lines as a table or as JSON.
type TailPrinter struct {
	W      io.Writer
	Std    Stdio
	JSON   bool
	Width  int // of the terminal; 0: do not cut
	header bool
}

// The table's columns before COMMAND, and their widths.
const tailRowFormat = "%-14s %-14s %-10s %-8s %s\n"

// eventSummary is what the COMMAND column shows: raw log text, to escape.
func eventSummary(ev *queue.Event) string {
	switch {
	case ev.Torn != nil:
		return fmt.Sprintf("%d torn bytes at byte %d skipped", ev.Torn.Bytes, ev.Torn.Offset)
	case ev.Command != "":
		return ev.Command
	case ev.Path != "":
		return string(ev.Kind) + " " + ev.Path
	case ev.Tool != "":
		return "tool " + ev.Tool
	case ev.Kind == queue.KindPatch:
		return "patch in " + ev.Cwd
	case ev.ID != "":
		return "request " + ev.ID
	}
	return "-"
}

// TermWidth is the width of the terminal w writes to, else $COLUMNS, else
// 0 (not a terminal: nothing is cut).
func TermWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c > 0 {
		return c
	}
	return 0
}

func (p *TailPrinter) Print(l audit.Line) error {
	if p.JSON {
		if l.Event == nil {
			fmt.Fprintf(p.Std.Err, "sluice audit tail: byte %d: not an event (torn by a crash, or edited); left out; run 'sluice audit verify'\n", l.Offset)
			return nil
		}
		_, err := p.W.Write(append(queue.JSONSafe(l.Raw), '\n'))
		return err
	}
	if !p.header {
		p.header = true
		if _, err := fmt.Fprintf(p.W, tailRowFormat, "TIME", "EVENT", "ACTOR", "STATUS", "COMMAND"); err != nil {
			return err
		}
	}
	ev := l.Event
	if ev == nil {
		raw := "(over the size limit)"
		if l.Raw != nil {
			raw = string(l.Raw)
		}
		_, err := fmt.Fprintf(p.W, tailRowFormat, "-", "(not an event)", "-", "-", p.cut(Show(raw)))
		return err
	}
	status := "-"
	switch {
	case ev.ExitCode != nil:
		status = "exit " + strconv.Itoa(*ev.ExitCode)
	case ev.Status != "" && string(ev.Status) != string(ev.Event):
		status = Show(string(ev.Status))
	}
	_, err := fmt.Fprintf(p.W, tailRowFormat, ev.TS.Local().Format("01-02 15:04:05"), Clip(Show(string(ev.Event)), 14),
		Clip(OrDash(Show(ev.Actor)), 10), Clip(status, 8), p.cut(Show(eventSummary(ev))))
	return err
}

// cut shortens an escaped command to what is left of the terminal's width,
// never in the middle of an escape.
func (p *TailPrinter) cut(s string) string {
	if p.Width <= 0 {
		return s
	}
	return queue.ClipEscaped(s, max(p.Width-48, 20))
}
