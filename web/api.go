package web

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/queue"
)

// verdictView is a verdict as the page shows it; every text in it is
// shaped.
type verdictView struct {
	Action   queue.Action `json:"action"`
	Category string       `json:"category"`
	Risk     string       `json:"risk"`
	Reasons  []Shown      `json:"reasons,omitempty"`
	Profile  string       `json:"profile,omitempty"`
	Sandbox  string       `json:"sandbox,omitempty"` // the sandbox line: what the profile may do
	Grants   []Shown      `json:"grants,omitempty"`
}

func viewVerdict(v *queue.Verdict, kind queue.Kind) *verdictView {
	if v == nil {
		return nil
	}
	out := &verdictView{Action: v.Action, Category: Plain(v.Category, 40), Risk: Plain(v.Risk, 20), Profile: Plain(v.Profile, 40)}
	for _, r := range v.Reasons {
		out.Reasons = append(out.Reasons, ShapeLine(r))
	}
	for _, g := range v.Grants {
		out.Grants = append(out.Grants, ShapeLine(g))
	}
	if p, err := sandbox.ParseProfile(v.Profile); err == nil && kind == queue.KindExec {
		out.Sandbox = "runs confined: " + string(p) + " (" + p.Describe() + ")"
	}
	return out
}

// itemView is one row of the queue.
type itemView struct {
	ID        string       `json:"id"`
	Box       string       `json:"box,omitempty"`
	State     queue.State  `json:"state"`
	Kind      queue.Kind   `json:"kind,omitempty"`
	Agent     Shown        `json:"agent"`
	Summary   Shown        `json:"summary"`
	Flagged   bool         `json:"flagged,omitempty"` // hidden characters or folds in what it asks
	Since     time.Time    `json:"since,omitzero"`
	ExpiresAt time.Time    `json:"expires_at,omitzero"`
	Verdict   *verdictView `json:"verdict,omitempty"`
	Error     string       `json:"error,omitempty"`
	// Digest tells the page that a request it shows changed (not what
	// an approval names: that is detailView's, or Approve's).
	Digest string `json:"digest,omitempty"`
	// Connect is a connect request's question.
	Connect *connectView `json:"connect,omitempty"`
	// Approve is what approving the row straight from the queue takes;
	// nil when the row cannot show the whole request (Review instead).
	// Where is then the command's working directory.
	Approve *listApproval `json:"approve,omitempty"`
	Where   *Shown        `json:"where,omitempty"`
}

// summaryMax bounds the queue row's summary (the detail shows all).
const summaryMax = 200

func viewItem(it Item) itemView {
	v := itemView{ID: Plain(it.ID, 80), Box: Plain(it.Box, 40), State: it.State, Since: it.Since, Digest: it.Digest}
	if it.Err != "" {
		v.Error = Plain(it.Err, 300)
	}
	r := it.Request
	if r == nil {
		v.Agent, v.Summary = ShapeLine(""), ShapeLine("")
		return v
	}
	v.Kind, v.ExpiresAt = r.Kind, r.ExpiresAt
	v.Agent = ShapeLine(clipRunes(r.Agent, 40))
	sum := r.Summary()
	full := Shape(sum)
	v.Flagged = full.Hidden || full.Folded
	v.Summary = ShapeLine(clipRunes(sum, summaryMax))
	v.Verdict = viewVerdict(it.Verdict, r.Kind)
	if r.Kind == queue.KindConnect {
		v.Connect = viewConnect(r, connectCommandMax)
	}
	return v
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func (s *Server) queueJSON(w http.ResponseWriter, r *http.Request, dev *Device) {
	writeJSON(w, http.StatusOK, s.queueView(dev))
}

// queueView is the queue as served to dev: a row that shows its whole
// request carries what approving it from the list takes, recorded as
// served to dev exactly as a detail is (serve).
func (s *Server) queueView(dev *Device) []itemView {
	items := s.src.Queue()
	out := make([]itemView, 0, len(items))
	for i := range items {
		v := viewItem(items[i])
		v.Approve = s.listApproval(dev, &items[i])
		if v.Approve != nil && v.Kind == queue.KindExec {
			w := ShapeLine(items[i].Request.Cwd)
			v.Where = &w
		}
		out = append(out, v)
	}
	return out
}

// pastView is one row of History.
type pastView struct {
	ID       string          `json:"id"`
	Box      string          `json:"box,omitempty"`
	Kind     queue.Kind      `json:"kind,omitempty"`
	What     Shown           `json:"what"`
	Agent    Shown           `json:"agent"`
	Decision queue.EventName `json:"decision"`
	By       Shown           `json:"by"`
	Reason   Shown           `json:"reason"`
	Status   queue.Status    `json:"status,omitempty"`
	ExitCode *int            `json:"exit_code,omitempty"`
	At       time.Time       `json:"at,omitzero"`
}

func (s *Server) historyJSON(w http.ResponseWriter, r *http.Request, _ *Device) {
	writeJSON(w, http.StatusOK, s.historyView())
}

func (s *Server) historyView() []pastView {
	past := s.src.History()
	out := make([]pastView, 0, len(past))
	for _, p := range past {
		out = append(out, pastView{ID: Plain(p.ID, 80), Box: Plain(p.Box, 40), Kind: p.Kind, What: ShapeLine(clipRunes(p.What, summaryMax)),
			Agent: ShapeLine(clipRunes(p.Agent, 40)), Decision: queue.EventName(Plain(string(p.Decision), 30)),
			By: ShapeLine(clipRunes(p.By, 80)), Reason: ShapeLine(clipRunes(p.Reason, 300)),
			Status: queue.Status(Plain(string(p.Status), 20)), ExitCode: p.ExitCode, At: p.At})
	}
	return out
}

// detailView is one request in full, as served to one device.
type detailView struct {
	itemView
	Mode      queue.Mode `json:"mode,omitempty"`
	Session   Shown      `json:"session"`
	Cwd       Shown      `json:"cwd"`
	Note      Shown      `json:"note"`
	Command   *Shown     `json:"command,omitempty"`
	Path      *Shown     `json:"path,omitempty"`
	Tool      *Shown     `json:"tool,omitempty"`
	Input     *Shown     `json:"input,omitempty"`
	Diff      *Shown     `json:"diff,omitempty"`
	DiffError *Shown     `json:"diff_error,omitempty"`
	Hidden    bool       `json:"hidden,omitempty"` // a hidden character was escaped anywhere above
	Folded    bool       `json:"folded,omitempty"`
	Digest    string     `json:"digest,omitempty"`  // what an approval names
	View      string     `json:"view,omitempty"`    // this showing's token
	WaitMS    int64      `json:"wait_ms"`           // until the server takes an approval
	Passkey   bool       `json:"passkey,omitempty"` // approving it needs the device's passkey
	Decided   *decided   `json:"decided,omitempty"`
}

// decided says who decided a request that no longer waits.
type decided struct {
	Event string `json:"event"`
	By    Shown  `json:"by"`
}

func (d *detailView) shape(s string, multi bool) *Shown {
	var sh Shown
	if multi {
		sh = Shape(s)
	} else {
		sh = ShapeLine(s)
	}
	d.Hidden = d.Hidden || sh.Hidden
	d.Folded = d.Folded || sh.Folded
	return &sh
}

// detail serves one request to a device, and remembers what it served:
// an approval from that device must name it.
func (s *Server) detail(w http.ResponseWriter, r *http.Request, dev *Device) {
	id := r.PathValue("id")
	it, err := s.src.Item(id)
	if err != nil {
		if !errors.Is(err, ErrGone) {
			s.opt.Logf("request %s: %v", Plain(id, 80), err)
		}
		v := detailView{itemView: itemView{ID: Plain(id, 80)}}
		if d, ok := s.winner(r.Context(), id); ok {
			v.Decided = &d
		}
		writeJSON(w, http.StatusGone, v)
		return
	}
	req := it.Request
	v := detailView{itemView: viewItem(*it), Mode: req.EffectiveMode()}
	v.Session, v.Cwd, v.Note = *v.shape(req.Session, false), *v.shape(req.Cwd, false), *v.shape(req.Note, true)
	v.Agent = *v.shape(req.Agent, false)
	switch req.Kind {
	case queue.KindExec:
		v.Command = v.shape(req.Command, true)
	case queue.KindTool:
		v.Tool = v.shape(req.Tool, false)
		v.Input = v.shape(string(req.Input), true)
	case queue.KindConnect:
		v.Connect = viewConnect(req, -1)
		v.shape(req.Command, true)
		v.shape(req.Target(), false)
	default:
		v.Path = v.shape(req.Path, false)
	}
	var diffSum string
	if it.Diff != "" || it.DiffErr != "" {
		sum := sha256.Sum256([]byte(it.Diff + "\x00" + it.DiffErr))
		diffSum = hex.EncodeToString(sum[:])
		if it.DiffErr != "" {
			v.DiffError = v.shape(it.DiffErr, false)
		} else {
			v.Diff = v.shape(strings.ReplaceAll(strings.TrimRight(it.Diff, "\n"), "\t", "    "), true)
		}
	}
	if it.State == queue.StatePending && it.Digest != "" {
		sv := s.serve(dev, id, req.Kind, it.Digest, diffSum)
		v.Digest, v.View = sv.digest, sv.view
		v.WaitMS = s.waitMS(sv)
		v.Passkey = s.needsPasskey(it)
	}
	writeJSON(w, http.StatusOK, v)
}

// maxServed bounds what is remembered per device.
const maxServed = 1000

// serve records that dev was shown request id with digest (and diff). The
// same content shown again keeps its first time: reloading the page does
// not restart the grace, nor hand out a second token. A showing whose
// token was spent on a decision that did not take is replaced by a new
// one, with its own grace.
func (s *Server) serve(dev *Device, id string, kind queue.Kind, digest, diff string) served {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.served[dev.ID]
	if m == nil {
		m = map[string]*served{}
		s.served[dev.ID] = m
	}
	if sv, ok := m[id]; ok && sv.digest == digest && sv.diff == diff && !sv.used {
		return *sv
	}
	if len(m) >= maxServed {
		clear(m) // a device that was shown a thousand requests is shown them again
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	sv := &served{kind: kind, digest: digest, diff: diff, view: hex.EncodeToString(b), at: s.opt.Now()}
	m[id] = sv
	return *sv
}

// decisionIn is the body of an approve or deny.
type decisionIn struct {
	Digest    string          `json:"digest"`
	View      string          `json:"view"`
	Reason    string          `json:"reason"`
	Scope     queue.Scope     `json:"scope,omitempty"`     // a connect request's allow: once (default) or run
	Assertion json.RawMessage `json:"assertion,omitempty"` // a passkey's, where the approval needs one
}

func readDecision(r *http.Request) (decisionIn, bool) {
	var in decisionIn
	err := json.NewDecoder(io.LimitReader(r.Body, 16<<10)).Decode(&in)
	return in, err == nil
}

// approve takes an approval only as the rules of issue 33 say: the
// digest and view this device was served (in the queue or the request's
// detail: the same showing), at least the grace period ago, the view not
// used before, the request unchanged since. A connect request asks about
// a host, not something to read: having been served it is enough.
func (s *Server) approve(w http.ResponseWriter, r *http.Request, dev *Device) {
	id := r.PathValue("id")
	in, ok := readDecision(r)
	if !ok || (in.Scope != "" && in.Scope != queue.ScopeOnce && in.Scope != queue.ScopeRun) {
		writeErr(w, http.StatusBadRequest, "bad request")
		return
	}
	now := s.opt.Now()
	s.mu.Lock()
	sv := s.served[dev.ID][id]
	var problem string
	code := http.StatusConflict
	switch {
	case sv == nil || in.View == "" || !tokenOK(in.View, sv.view):
		problem, code = "refused: this request was not shown to this device; open it first", http.StatusForbidden
	case in.Digest == "" || in.Digest != sv.digest:
		problem = "refused: the approval does not name the request as it was shown"
	case sv.used:
		problem = "refused: this showing of the request was already used for a decision"
	case sv.kind != queue.KindConnect && now.Sub(sv.at) < s.opt.Grace:
		problem, code = "refused: too soon after the request was shown; read it first", http.StatusTooEarly
	default:
		sv.used = true
	}
	var diff string
	var assert *webauthn.SessionData
	if sv != nil {
		diff, assert = sv.diff, sv.assert
	}
	s.mu.Unlock()
	if problem != "" {
		writeErr(w, code, problem)
		return
	}
	it, err := s.src.Item(id)
	if err != nil {
		s.decidedElsewhere(w, r, id, ErrGone)
		return
	}
	if it.State != queue.StatePending {
		s.decidedElsewhere(w, r, id, ErrGone)
		return
	}
	nowDiff := ""
	if it.Diff != "" || it.DiffErr != "" {
		sum := sha256.Sum256([]byte(it.Diff + "\x00" + it.DiffErr))
		nowDiff = hex.EncodeToString(sum[:])
	}
	if it.Digest != in.Digest || nowDiff != diff {
		writeErr(w, http.StatusConflict, "refused: the request changed after it was shown; look at it again")
		return
	}
	if s.needsPasskey(it) {
		if err := s.checkAssertion(dev, assert, in.Assertion); err != nil {
			writeErr(w, http.StatusForbidden, "refused: "+Plain(err.Error(), 300)+" (open the request again)")
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	scope := queue.Scope("")
	if it.Request.Kind == queue.KindConnect {
		scope = cmp.Or(in.Scope, queue.ScopeOnce)
	}
	switch err := s.src.Approve(ctx, id, in.Digest, diff, s.by(dev), scope); {
	case errors.Is(err, ErrChanged):
		writeErr(w, http.StatusConflict, "refused: the request changed after it was shown; it was answered denied")
	case err != nil:
		s.decidedElsewhere(w, r, id, err)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "by": s.by(dev), "scope": scope})
	}
}

// deny answers a request denied with the person's reason.
func (s *Server) deny(w http.ResponseWriter, r *http.Request, dev *Device) {
	id := r.PathValue("id")
	in, ok := readDecision(r)
	if !ok {
		writeErr(w, http.StatusBadRequest, "bad request")
		return
	}
	reason := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.TrimSpace(in.Reason))
	reason = clipRunes(reason, 500)
	if reason == "" {
		reason = "denied by " + s.by(dev)
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if err := s.src.Deny(ctx, id, s.by(dev), reason); err != nil {
		s.decidedElsewhere(w, r, id, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "by": s.by(dev)})
}

// decidedElsewhere answers a decision that did not take: who won, when
// the audit log says.
func (s *Server) decidedElsewhere(w http.ResponseWriter, r *http.Request, id string, err error) {
	out := map[string]any{"error": Plain(trimPrefix(err.Error()), 300)}
	if d, ok := s.winner(r.Context(), id); ok {
		out["decided"] = d
	}
	writeJSON(w, http.StatusConflict, out)
}
