package audit

import (
	"strconv"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// appendEvent appends ev as encoding/json (HTML escaping off) encodes it,
// without the newline, or reports false for what it leaves to
// encoding/json: changed files, checkpoints, torn spans, a connect
// request's members, a run's network contacts, and times outside years
// 0-9999. Every step an engine takes is an audit line, and most are
// a handful of strings; reflection made the encoding a large part of the
// recorder's time with a backlog (FuzzEventEncoding holds the bytes equal).
func appendEvent(b []byte, ev *queue.Event) ([]byte, bool) {
	if len(ev.ChangedFiles) > 0 || ev.Checkpoint != nil || ev.Torn != nil || !queue.EncodableTime(ev.TS) ||
		ev.Host != "" || ev.RunID != "" || len(ev.Network) > 0 || ev.Scope != "" {
		return b, false
	}
	b = append(b, seqPrefix...)
	b = strconv.AppendInt(b, ev.Seq, 10)
	b = append(b, `,"ts":"`...)
	b = ev.TS.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = queue.AppendJSONMember(b, "id", ev.ID)
	b = append(b, `,"event":`...)
	b = queue.AppendJSONString(b, string(ev.Event))
	b = queue.AppendJSONMember(b, "actor", ev.Actor)
	b = queue.AppendJSONMember(b, "agent", ev.Agent)
	b = queue.AppendJSONMember(b, "kind", string(ev.Kind))
	b = queue.AppendJSONMember(b, "command", ev.Command)
	b = queue.AppendJSONMember(b, "edited_from", ev.EditedFrom)
	b = queue.AppendJSONMember(b, "path", ev.Path)
	b = queue.AppendJSONMember(b, "tool", ev.Tool)
	b = queue.AppendJSONMember(b, "cwd", ev.Cwd)
	b = queue.AppendJSONMember(b, "spool", ev.Spool)
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
		b = queue.AppendJSONMember(b, "profile", v.Profile)
		b = append(b, '}')
	}
	b = queue.AppendJSONMember(b, "status", string(ev.Status))
	b = queue.AppendJSONMember(b, "reason", ev.Reason)
	if ev.ExitCode != nil {
		b = append(b, `,"exit_code":`...)
		b = strconv.AppendInt(b, int64(*ev.ExitCode), 10)
	}
	if ev.DurationMS != 0 {
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendInt(b, ev.DurationMS, 10)
	}
	b = queue.AppendJSONMember(b, "output_sha256", ev.OutputSHA256)
	b = queue.AppendJSONMember(b, "sandbox", ev.Sandbox)
	b = append(b, `,"prev":`...)
	b = queue.AppendJSONString(b, ev.Prev)
	b = queue.AppendJSONMember(b, "hash", ev.Hash)
	return append(b, '}'), true
}
