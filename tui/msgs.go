package tui

import (
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// engineMsg carries what the engine did since the last one, in order.
type engineMsg struct{ events []any }

// requestPending: a request waits for a person (inside engineMsg).
type requestPending struct {
	req     *queue.Request
	verdict queue.Verdict
	at      time.Time
	checkpt string // Options.CheckpointNote's, looked at once, off the UI goroutine
}

// requestGone: a request left the queue without this console (inside
// engineMsg).
type requestGone struct {
	id string
	op queue.WatchOp
}

// runStarted: a run began; its output goes to the run's screen (inside
// engineMsg).
type runStarted struct{ run *run }

// runWaits: a run waits for its turn behind run holder, which changes
// files in the same project; "" when it waits no more (inside engineMsg).
type runWaits struct{ id, holder string }

// resultWaits: a run ended, but its result cannot be written yet
// (inside engineMsg).
type resultWaits struct{ id, why string }

// runFinished: a request was answered (inside engineMsg).
type runFinished struct {
	id  string
	req *queue.Request
	res queue.Result
	at  time.Time
}

// loggedEvents: audit log lines, in log order (inside engineMsg).
type loggedEvents struct{ events []queue.Event }

// reconfigured: config.toml was read again (inside engineMsg); problem
// says why it did not load ("" when it did), text what the reload did.
type reconfigured struct {
	settings *Settings // nil when it did not load
	problem  string
	text     string
}

// spoolProblem: the spool cannot be written, or can again ("").
type spoolProblem struct{ problem string }

// linkChanged: the hub link went up or down (inside engineMsg).
type linkChanged struct{}

// tickMsg redraws while a grace period counts down or output arrives.
type tickMsg time.Time

// previewedMsg carries a file request's diff preview, computed off the UI.
type previewedMsg struct {
	id   string
	diff string
	err  error
}

// actedMsg reports how an approve, deny or kill the person asked for ended.
type actedMsg struct {
	id    string
	verb  string
	res   queue.Result
	err   error
	fleet bool   // sent to the hub: res is empty, the box acts on it
	note  string // said after the outcome, when not empty
}

// trustsReadMsg carries the trusts in force, read off the UI goroutine;
// again: read them again in a while.
type trustsReadMsg struct {
	trusts []string
	again  bool
}

// recheckedMsg carries a file request's diff recomputed right before
// approving, to compare with what the person saw.
type recheckedMsg struct {
	id    string
	diff  string
	err   error
	rule  string    // the rule pattern to add on approve, if any
	scope RuleScope // where the rule applies
}

// ruleProposedMsg carries a proposed rule and how many past requests it
// would have matched.
type ruleProposedMsg struct {
	id       string
	patterns []string // narrowest first
	matches  []int    // past requests each would have matched
	choice   int      // the one chosen (← narrower, → wider)
	trust    bool     // for T: a trust for the agent session, not a rule
	err      error
}

// pattern is the chosen pattern.
func (r ruleProposedMsg) pattern() string { return r.patterns[r.choice] }

// trustedMsg reports a trust granted with T, before the approval.
type trustedMsg struct {
	id   string
	text string
	err  error
}

// hostProposedMsg carries the network_allow entries proposed for a
// connect request, and what each would make of the policy file.
type hostProposedMsg struct {
	id      string
	entries []string // narrowest first
	texts   []string // the network_allow statement with each
	matches []int    // past connect requests each would have admitted (nil: not counted)
	choice  int      // the one chosen (← narrower, → wider)
	err     error
}

// hostRuleAddedMsg reports a network_allow entry was kept (or why not),
// before the approval.
type hostRuleAddedMsg struct {
	id, entry, where string
	err              error
}

// ruleAddedMsg reports the rule was written to the policy file.
type ruleAddedMsg struct {
	id      string
	where   string
	pattern string    // the rule's command pattern
	scope   RuleScope // where it applies
	err     error
}

// logLoadedMsg carries the tail of a finished run's log, for runs whose
// screen was let go.
type logLoadedMsg struct {
	id   string
	data []byte
	err  error
}

// editJudgedMsg carries the policy's verdict on a command the person
// edited, judged off the UI goroutine.
type editJudgedMsg struct {
	id      string
	command string
	verdict queue.Verdict
}

// undoPlannedMsg carries what undoing a run would do.
type undoPlannedMsg struct {
	plan *UndoPlan
	err  error
}

// undoneMsg reports how an undo ended.
type undoneMsg struct {
	text string
	err  error
}

// errMsg is an error for the status bar.
type errMsg struct{ err error }

// webDevicesMsg carries the web approver's paired devices, read off the
// UI goroutine for W.
type webDevicesMsg struct {
	devs []WebDevice
	err  error
}

// webDeviceRevokedMsg reports how revoking a web device ended.
type webDeviceRevokedMsg struct {
	name string
	err  error
}
