package web

import (
	"strings"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/queue"
)

// connectView is a connect request's question: the run RunID (Run, its
// short form) whose command is Command wants to reach Target.
type connectView struct {
	Run     string `json:"run"`
	RunID   string `json:"run_id"`
	Command Shown  `json:"command"`
	Target  Shown  `json:"target"`
}

// connectCommandMax bounds the asking run's command in a queue row: it
// is there to say which run asks, not to be read (the detail has it all).
const connectCommandMax = 80

// viewConnect is r's question; its command cut to max runes (max < 0:
// whole).
func viewConnect(r *queue.Request, max int) *connectView {
	cmd := r.Command
	if max >= 0 {
		cmd = clipRunes(cmd, max)
	}
	run := r.RunID
	if len(run) > 10 {
		run = run[len(run)-8:] // the console's short form
	}
	return &connectView{Run: Plain(run, 12), RunID: Plain(r.RunID, 80), Command: ShapeLine(cmd), Target: ShapeLine(r.Target())}
}

// listApproval is what approving a queue row takes: the digest and the
// token of its showing to this device, and how long until the server
// takes the approval.
type listApproval struct {
	Digest string `json:"digest"`
	View   string `json:"view"`
	WaitMS int64  `json:"wait_ms"`
}

// listWholeMax is the longest command a queue row offers Approve for: a
// short line, which the row shows whole (the page checks that it was not
// cut); a longer one is approved from its detail, read to its end.
const listWholeMax = 120

// listApproval serves it to dev for approval from the list when its row
// shows the whole of what an approval lets happen: a one-line command of
// at most listWholeMax runes, or a connect request's host (what its run
// would reach). A file change (its diff), a tool's input, a request whose
// approval needs a passkey or whose file does not read are approved from
// their detail only: nil.
func (s *Server) listApproval(dev *Device, it *Item) *listApproval {
	r := it.Request
	if it.State != queue.StatePending || r == nil || it.Digest == "" || it.Err != "" || s.needsPasskey(it) {
		return nil
	}
	switch r.Kind {
	case queue.KindExec:
		if strings.ContainsAny(r.Command, "\n") || utf8.RuneCountInString(r.Command) > listWholeMax {
			return nil
		}
	case queue.KindConnect:
	default:
		return nil
	}
	sv := s.serve(dev, it.ID, r.Kind, it.Digest, "")
	return &listApproval{Digest: sv.digest, View: sv.view, WaitMS: s.waitMS(sv)}
}

// waitMS is how long until the server takes an approval of the showing
// sv: the rest of the grace period, none for a connect request.
func (s *Server) waitMS(sv served) int64 {
	if sv.kind == queue.KindConnect {
		return 0
	}
	return max(0, (s.opt.Grace - s.opt.Now().Sub(sv.at)).Milliseconds())
}
