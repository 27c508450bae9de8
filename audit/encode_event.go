package audit

import (
	"strconv"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// appendEvent appends ev as encoding/json (HTML escaping off) encodes it,
// without the newline, or reports false for what it leaves to
// encoding/json: changed files, checkpoints, torn spans, and times outside
// years 0-9999. Every step an engine takes is an audit line, and most are
// a handful of strings; reflection made the encoding a large part of the
// recorder's time with a backlog (FuzzEventEncoding holds the bytes equal).
func appendEvent(b []byte, ev *queue.Event) ([]byte, bool) {
	if len(ev.ChangedFiles) > 0 || ev.Checkpoint != nil || ev.Torn != nil || !plainTime(ev.TS) {
		return b, false
	}
	b = append(b, seqPrefix...)
	b = strconv.AppendInt(b, ev.Seq, 10)
	b = append(b, `,"ts":"`...)
	b = ev.TS.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = field(b, "id", ev.ID)
	b = append(b, `,"event":`...)
	b = queue.AppendJSONString(b, string(ev.Event))
	b = field(b, "actor", ev.Actor)
	b = field(b, "agent", ev.Agent)
	b = field(b, "kind", string(ev.Kind))
	b = field(b, "command", ev.Command)
	b = field(b, "edited_from", ev.EditedFrom)
	b = field(b, "path", ev.Path)
	b = field(b, "tool", ev.Tool)
	b = field(b, "cwd", ev.Cwd)
	if v := ev.Verdict; v != nil {
		b = append(b, `,"verdict":{"action":`...)
		b = queue.AppendJSONString(b, string(v.Action))
		b = append(b, `,"category":`...)
		b = queue.AppendJSONString(b, v.Category)
		b = append(b, `,"risk":`...)
		b = queue.AppendJSONString(b, v.Risk)
		if len(v.Reasons) > 0 {
			b = append(b, `,"reasons":[`...)
			for i, r := range v.Reasons {
				if i > 0 {
					b = append(b, ',')
				}
				b = queue.AppendJSONString(b, r)
			}
			b = append(b, ']')
		}
		b = field(b, "profile", v.Profile)
		b = append(b, '}')
	}
	b = field(b, "status", string(ev.Status))
	b = field(b, "reason", ev.Reason)
	if ev.ExitCode != nil {
		b = append(b, `,"exit_code":`...)
		b = strconv.AppendInt(b, int64(*ev.ExitCode), 10)
	}
	if ev.DurationMS != 0 {
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendInt(b, ev.DurationMS, 10)
	}
	b = field(b, "output_sha256", ev.OutputSHA256)
	b = field(b, "sandbox", ev.Sandbox)
	b = append(b, `,"prev":`...)
	b = queue.AppendJSONString(b, ev.Prev)
	b = field(b, "hash", ev.Hash)
	return append(b, '}'), true
}

// field appends ,"name":"s" unless s is empty (omitempty).
func field(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return queue.AppendJSONString(b, s)
}

// plainTime: encoding/json refuses years past 9999 and before 0, and zone
// offsets of a day or more; those are left to it, to fail the same way.
func plainTime(t time.Time) bool {
	y := t.Year()
	_, off := t.Zone()
	return y >= 0 && y <= 9999 && off > -24*3600 && off < 24*3600
}
