package tui

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/themes"
)

// Options wire the console to an engine and say how it behaves.
type Options struct {
	// Engine is the engine the console drives. The console sets its
	// Observer; the caller runs Engine.Serve with the same context it
	// gives Run... (see cmd/sluice/console.go).
	Engine *queue.Engine
	// Preview shows file requests' diffs; nil: none are shown.
	Preview Previewer
	// Terminal reaches the runs' terminals; nil: keys and sizes are
	// not passed on.
	Terminal Terminal
	// Rules gives A its rules and the header the policy's problems; nil
	// disables A.
	Rules Rules
	// Trusts gives T its trusts and the header those in force; nil
	// disables T.
	Trusts Trusts
	// PolicyFile is the file Rules.AddRule writes to, as a person reads
	// it.
	PolicyFile string
	// Undo gives u its effect and the detail its checkpoint notes; nil
	// disables u.
	Undo Undo
	// Devices lists and revokes the browsers paired with the web
	// approver (W); nil disables W.
	Devices WebDevices
	// Demo marks the console as sluice console --demo: the header says
	// so, and an empty status line says which key does what.
	Demo bool

	Styles *themes.Styles
	// AutoTheme picks the dark or light built-in theme from the
	// terminal's background once it answers.
	AutoTheme bool
	Keys      KeyMap
	Actor     string           // the person, for the audit log
	Now       func() time.Time // default time.Now
	// Grace: approve keys are inert until the selection has been quiet
	// this long (default 425 ms), at most GraceMax (default 1.5 s) after
	// it changed.
	Grace, GraceMax time.Duration
	Bell, Notify    bool // ring / desktop-notify when a request needs a person
	Tmux            bool // wrap notifications for tmux passthrough
	// Ctx bounds the runs a person starts; cancelling it kills them.
	Ctx context.Context
	// Sandbox says how runs are confined here ("Landlock ABI 7 and
	// seccomp"), or, with SandboxOff set, why they are not.
	Sandbox    string
	SandboxOff bool
	// Spool is the spool the console watches, as a person reads it
	// (~/… for the home directory).
	Spool string
	// Shared: another console or sluice serve was serving the spool when
	// this one started (either may act on a request).
	Shared bool
	// Fleet, when set, makes this the console of many machines (sluice
	// console --hub): requests, runs and outcomes come through the
	// Observer and Logged with ids BOX/ID, the person's decisions go to
	// Fleet, and Engine is nil.
	Fleet Fleet
}

// Previewer computes the diff a file request would make, now. It is
// called off the UI goroutine.
type Previewer interface {
	Preview(req *queue.Request) (string, error)
}

// Terminal is the runs' terminals (*exec.Runner is one). Its methods are
// called off the UI goroutine and must not block.
type Terminal interface {
	// Input writes what the person typed to run id's terminal.
	Input(id string, p []byte)
	// Resize gives run id's terminal the output pane's size.
	Resize(id string, rows, cols uint16)
}

// Rules is the person's policy as A changes it, and its health.
type Rules interface {
	// ProposeRule gives the patterns a person may choose for command,
	// narrowest first, and the one to offer first (none: no rule is
	// safe).
	ProposeRule(command string) (patterns []string, def int)
	// CountMatches counts the past requests pattern would have matched.
	CountMatches(pattern string) (int, error)
	// RuleText is what AddRule would write (or grant) for scope.
	RuleText(req *queue.Request, pattern string, scope RuleScope) string
	// AddRule keeps the rule and says where it went.
	AddRule(req *queue.Request, pattern string, scope RuleScope) (where string, err error)
	// PolicyProblem says why the policy files do not load as they are
	// now (the last good policy stays in force); "" when they do. View
	// calls it: it must not do I/O.
	PolicyProblem() string
	// ProposeHostRule gives the network_allow entries a person may
	// choose for a connection to host at port, narrowest first, and the
	// one to offer first (none: no entry can name the host).
	ProposeHostRule(host string, port int) (entries []string, def int)
	// HostRuleText is what AddHostRule would write for entry, as the
	// file will read. It may read the file: the console calls it off the
	// UI goroutine.
	HostRuleText(req *queue.Request, entry string) (string, error)
	// CountHostMatches counts, for each of entries, the past connect
	// requests it would have admitted. Off the UI goroutine too.
	CountHostMatches(entries []string) ([]int, error)
	// AddHostRule adds entry to the person's network_allow, where every
	// later networked run reads it, and says where it went.
	AddHostRule(req *queue.Request, entry string) (where string, err error)
}

// Trusts are the trusts T grants: a pattern that runs without asking for
// one agent session, for a while.
type Trusts interface {
	// TrustRule trusts pattern for req's agent session and says so.
	TrustRule(req *queue.Request, pattern string) (string, error)
	// Trusts describes the trusts in force, soonest end first. It may
	// read files: the console calls it off the UI goroutine.
	Trusts() []string
}

// Undo is what a run's checkpoint gives the console.
type Undo interface {
	// CheckpointNote says why req, if approved with v, will not be
	// checkpointed ("" if it will, or needs none).
	CheckpointNote(req *queue.Request, v queue.Verdict) string
	// PlanUndo works out what undoing run id would do, taking the
	// undo's own checkpoint.
	PlanUndo(id string) (*UndoPlan, error)
	// ApplyUndo carries plan out, overwriting files changed since the
	// run only with force, and says what it did.
	ApplyUndo(plan *UndoPlan, force bool) (string, error)
}

// WebDevices are the browsers paired with the web approver ('sluice web
// pair'). The console calls them off the UI goroutine.
type WebDevices interface {
	// WebDevices lists the paired devices.
	WebDevices() ([]WebDevice, error)
	// RevokeWebDevice unpairs the device called name as 'sluice web
	// revoke' does, audited: its open pages lose access within a second.
	// An error may come with the device revoked (the audit log refused
	// the event): it says so.
	RevokeWebDevice(name string) error
}

// WebDevice is a paired browser as the console lists it.
type WebDevice struct {
	Name    string
	By      string // the person who paired it
	Browser string // its user agent, as it said at pairing
	// LastSeen is zero when it has not reached the server since pairing.
	PairedAt, LastSeen, ExpiresAt time.Time
}

// WebDeviceFuncs are functions as WebDevices.
type WebDeviceFuncs struct {
	List   func() ([]WebDevice, error)
	Revoke func(name string) error
}

// WebDevices implements WebDevices.
func (f WebDeviceFuncs) WebDevices() ([]WebDevice, error) {
	if f.List == nil {
		return nil, errors.New("no web approver here")
	}
	return f.List()
}

// RevokeWebDevice implements WebDevices.
func (f WebDeviceFuncs) RevokeWebDevice(name string) error {
	if f.Revoke == nil {
		return errors.New("devices cannot be revoked here")
	}
	return f.Revoke(name)
}

// Fleet decides requests that wait on other machines, through a hub.
type Fleet interface {
	// Approve and Deny record the person's decision on the request as
	// shown (the very value the console got); they return once the hub
	// holds it or refused it (another console decided first, the request
	// changed). The box carries it out: its output and outcome come
	// through the Observer. scope is a connect request's allow's reach
	// (queue.ScopeRun: the rest of the run); empty for other kinds.
	Approve(ctx context.Context, shown *queue.Request, scope queue.Scope) error
	Deny(ctx context.Context, shown *queue.Request, reason string) error
	// Link is the hub as the header shows it: its address, or why it
	// cannot be reached (ok false).
	Link() (text string, ok bool)
}

// HostOf is the box a fleet request id (BOX/ID) is on.
func HostOf(id string) string {
	if i := strings.IndexByte(id, '/'); i > 0 {
		return id[:i]
	}
	return ""
}

// PreviewFunc is a function as a Previewer.
type PreviewFunc func(req *queue.Request) (string, error)

// Preview implements Previewer.
func (f PreviewFunc) Preview(req *queue.Request) (string, error) { return f(req) }

// RuleFuncs are functions as Rules; a nil one does nothing.
type RuleFuncs struct {
	Propose func(command string) (patterns []string, def int)
	Count   func(pattern string) (int, error)
	Text    func(req *queue.Request, pattern string, scope RuleScope) string
	Add     func(req *queue.Request, pattern string, scope RuleScope) (string, error)
	Problem func() string
	// ProposeHost, HostText and AddHost are the host rules of A on a
	// connect request (network_allow).
	ProposeHost func(host string, port int) ([]string, int)
	HostText    func(req *queue.Request, entry string) (string, error)
	AddHost     func(req *queue.Request, entry string) (string, error)
	CountHost   func(entries []string) ([]int, error)
}

// CountHostMatches implements Rules.
func (r RuleFuncs) CountHostMatches(entries []string) ([]int, error) {
	if r.CountHost == nil {
		return make([]int, len(entries)), nil
	}
	return r.CountHost(entries)
}

// ProposeRule implements Rules.
func (r RuleFuncs) ProposeRule(command string) ([]string, int) {
	if r.Propose == nil {
		return nil, 0
	}
	return r.Propose(command)
}

// CountMatches implements Rules.
func (r RuleFuncs) CountMatches(pattern string) (int, error) {
	if r.Count == nil {
		return 0, nil
	}
	return r.Count(pattern)
}

// RuleText implements Rules.
func (r RuleFuncs) RuleText(req *queue.Request, pattern string, scope RuleScope) string {
	if r.Text == nil {
		return ""
	}
	return r.Text(req, pattern, scope)
}

// AddRule implements Rules.
func (r RuleFuncs) AddRule(req *queue.Request, pattern string, scope RuleScope) (string, error) {
	if r.Add == nil {
		return "", errors.New("rules cannot be added here")
	}
	return r.Add(req, pattern, scope)
}

// PolicyProblem implements Rules.
func (r RuleFuncs) PolicyProblem() string {
	if r.Problem == nil {
		return ""
	}
	return r.Problem()
}

// ProposeHostRule implements Rules.
func (r RuleFuncs) ProposeHostRule(host string, port int) ([]string, int) {
	if r.ProposeHost == nil {
		return nil, 0
	}
	return r.ProposeHost(host, port)
}

// HostRuleText implements Rules.
func (r RuleFuncs) HostRuleText(req *queue.Request, entry string) (string, error) {
	if r.HostText == nil {
		return "network_allow += " + entry, nil
	}
	return r.HostText(req, entry)
}

// AddHostRule implements Rules.
func (r RuleFuncs) AddHostRule(req *queue.Request, entry string) (string, error) {
	if r.AddHost == nil {
		return "", errors.New("host rules cannot be added here")
	}
	return r.AddHost(req, entry)
}

// TrustFuncs are functions as Trusts.
type TrustFuncs struct {
	Trust func(req *queue.Request, pattern string) (string, error)
	List  func() []string
}

// TrustRule implements Trusts.
func (t TrustFuncs) TrustRule(req *queue.Request, pattern string) (string, error) {
	if t.Trust == nil {
		return "", errors.New("trusts cannot be granted here")
	}
	return t.Trust(req, pattern)
}

// Trusts implements Trusts.
func (t TrustFuncs) Trusts() []string {
	if t.List == nil {
		return nil
	}
	return t.List()
}

// UndoFuncs are functions as Undo.
type UndoFuncs struct {
	Note  func(req *queue.Request, v queue.Verdict) string
	Plan  func(id string) (*UndoPlan, error)
	Apply func(plan *UndoPlan, force bool) (string, error)
}

// CheckpointNote implements Undo.
func (u UndoFuncs) CheckpointNote(req *queue.Request, v queue.Verdict) string {
	if u.Note == nil {
		return ""
	}
	return u.Note(req, v)
}

// PlanUndo implements Undo.
func (u UndoFuncs) PlanUndo(id string) (*UndoPlan, error) {
	if u.Plan == nil {
		return nil, errors.New("undo is not available here")
	}
	return u.Plan(id)
}

// ApplyUndo implements Undo.
func (u UndoFuncs) ApplyUndo(plan *UndoPlan, force bool) (string, error) {
	if u.Apply == nil {
		return "", errors.New("undo is not available here")
	}
	return u.Apply(plan, force)
}
