package tui

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/themes"
)

// Options wire the console to an engine and say how it behaves.
type Options struct {
	// Engine is the engine the console drives. The console sets its
	// Observer; the caller runs Engine.Serve with the same context it
	// gives Run... (see cmd/sluice/console.go).
	Engine *queue.Engine
	// Preview computes the diff a file request would make, now.
	Preview func(req *queue.Request) (string, error)
	// Input writes to a running request's terminal; Resize resizes it.
	Input  func(id string, p []byte)
	Resize func(id string, rows, cols uint16)
	// ProposeRule, CountMatches, RuleText and AddRule implement "approve
	// and remember a rule" (A); nil disables it. ProposeRule gives the
	// patterns a person may choose, narrowest first, and the one to offer
	// first (none: no rule is safe); RuleText is what AddRule would write
	// (or grant) for a scope; AddRule says where it went.
	ProposeRule  func(command string) (patterns []string, def int)
	CountMatches func(pattern string) (int, error)
	RuleText     func(req *queue.Request, pattern string, scope RuleScope) string
	AddRule      func(req *queue.Request, pattern string, scope RuleScope) (where string, err error)
	// TrustRule trusts pattern for req's agent session for a while (T);
	// Trusts describes the trusts in force, for the header. nil: off.
	TrustRule func(req *queue.Request, pattern string) (string, error)
	Trusts    func() []string
	// PolicyFile is the file AddRule writes to, as a person reads it.
	PolicyFile string
	// PlanUndo works out what undoing run id would do (taking the
	// undo's own checkpoint); ApplyUndo carries the plan out, overwriting
	// files changed since the run only with force. nil disables u.
	PlanUndo func(id string) (*UndoPlan, error)
	// CheckpointNote, when set, says why a request, if approved, will not
	// be checkpointed (the detail shows it before approval).
	CheckpointNote func(req *queue.Request, v queue.Verdict) string
	ApplyUndo      func(plan *UndoPlan, force bool) (string, error)
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
	// PolicyProblem says why the policy files do not load as they are
	// now (the last good policy stays in force); "" when they do.
	PolicyProblem func() string
	// Fleet, when set, makes this the console of many machines (sluice
	// console --hub): requests, runs and outcomes come through the
	// Observer and Logged with ids BOX/ID, the person's decisions go to
	// Fleet, and Engine is nil.
	Fleet Fleet
}

// Fleet decides requests that wait on other machines, through a hub.
type Fleet interface {
	// Approve and Deny record the person's decision on the request as
	// shown (the very value the console got); they return once the hub
	// holds it or refused it (another console decided first, the request
	// changed). The box carries it out: its output and outcome come
	// through the Observer.
	Approve(ctx context.Context, shown *queue.Request) error
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

// deps is what the model shares with its feed and commands (STYLE's
// Common): fixed after New, except the pane size, which is atomic.
type deps struct {
	opt        Options
	rows, cols atomic.Uint32
	wg         sync.WaitGroup // person-started actions still running
}

func (d *deps) now() time.Time {
	if d.opt.Now != nil {
		return d.opt.Now()
	}
	return time.Now()
}

func (d *deps) input(id string, p []byte) {
	if d.opt.Input != nil {
		d.opt.Input(id, p)
	}
}

// paneSize is the output pane's inner size, for new runs' ptys.
func (d *deps) paneSize() (rows, cols uint16) {
	r, c := d.rows.Load(), d.cols.Load()
	if r == 0 || c == 0 {
		return 24, 80
	}
	return uint16(r), uint16(c)
}

// focus is the pane the keys act on.
type focus int

const (
	focusQueue focus = iota
	focusHistory
	focusOutput
)

func (f focus) String() string {
	return [...]string{"queue", "history", "output"}[f]
}

// mode is what the keys mean when no dialog is open: the panes, the
// filter's input, or the help.
type mode int

const (
	modeNormal mode = iota
	modeFilter
	modeHelp
)

func (m mode) String() string {
	return [...]string{"normal", "filter", "help"}[m]
}

// item is a pending request as the queue shows it.
type item struct {
	req     *queue.Request
	verdict queue.Verdict // with its parts, judged once by the engine
	arrived time.Time
	hidden  bool   // the request holds hidden characters
	tricks  string // how its command's layout could mislead (layoutTricks)
	seenEnd bool   // its command has been shown to its last line
	clipped bool   // its command or tool input is longer than the console shows
	marked  bool   // marked for a batch approval (space)
	diff    string // file requests: the preview as shown
	diffErr error
	diffOK  bool   // diff computed
	busy    bool   // an action on it is under way
	checkpt string // why a run of it will not be checkpointed ("" if it will, or needs none)
	sent    string // fleet: the decision the hub holds, while its box has yet to act

	// The command as the detail shows it, for the width and styles it
	// was laid out for.
	cmdLines  []string
	cmdWidth  int
	cmdStyles *themes.Styles
}

// Model is the console: one root model; the panes are plain render
// functions over its state.
type Model struct {
	d    *deps
	feed *feed
	st   *themes.Styles
	keys KeyMap
	// helpKeys are the keys as help shows them: in a fleet console, what
	// only a box's own console does is left out.
	helpKeys KeyMap
	help     help.Model

	width, height int
	focus         focus
	mode          mode

	pending  []*item          // oldest first
	queued   map[string]*item // pending by id
	selected int              // index into the filtered queue
	history  []*run           // oldest first; running ones too
	histSel  int              // index into history, from the newest (0 = newest)
	byID     map[string]*run

	filter string
	trusts []string  // the trusts in force, as last read (readTrusts)
	input  lineInput // the filter's
	dlg    dialog    // the open dialog, or nil
	// judging is the edited command whose verdict the console waits
	// for, to ask whether to run it ("" once anything else opened).
	judging string

	graceFrom, graceUntil time.Time
	lastChange            time.Time // the last arrival or selection change
	ticking               bool
	detailTop             int // first detail line shown
	status                string
	statusErr             bool
	configProblem         string // why config.toml, changed, does not load
	spoolProblem          string // why the spool cannot be written
	quitting              bool
	// lastGone is the request that last left the queue, and when: a key
	// meant for it, pressed just after, is told where it went.
	lastGone   string
	lastGoneAt time.Time
}

var _ tea.Model = (*Model)(nil)

// maxScreens bounds how many finished runs keep their emulated screen;
// older ones show their log when selected.
const maxScreens = 32

// maxHistory bounds the history kept in memory.
const maxHistory = 500

// New builds the console and sets itself as the engine's observer.
func New(opt Options) *Model {
	if opt.Grace <= 0 {
		opt.Grace = 425 * time.Millisecond
	}
	if opt.GraceMax <= 0 {
		opt.GraceMax = 1500 * time.Millisecond
	}
	if opt.Ctx == nil {
		opt.Ctx = context.Background()
	}
	if opt.Styles == nil {
		opt.Styles = themes.Default(true)
	}
	d := &deps{opt: opt}
	m := &Model{d: d, st: opt.Styles, keys: opt.Keys, help: help.New(), byID: map[string]*run{}, queued: map[string]*item{}}
	if len(m.keys.Approve.Keys()) == 0 {
		m.keys = DefaultKeyMap()
	}
	m.helpKeys = m.keys
	if opt.Fleet != nil {
		h := &m.helpKeys
		for _, b := range []*key.Binding{&h.Edit, &h.ApproveRule, &h.Trust, &h.ApproveUnconfined, &h.Kill, &h.Undo} {
			b.SetEnabled(false)
		}
		h.Filter.SetHelp(h.Filter.Help().Key, h.Filter.Help().Desc+" (@box: one box)")
	}
	m.feed = newFeed(d)
	if opt.Engine != nil {
		opt.Engine.Observer = m.feed
	}
	m.help.Styles.ShortKey = m.st.Help.Key
	m.help.Styles.ShortDesc = m.st.Help.Desc
	m.help.Styles.ShortSeparator = m.st.Help.Sep
	m.help.Styles.FullKey = m.st.Help.Key
	m.help.Styles.FullDesc = m.st.Help.Desc
	m.help.Styles.FullSeparator = m.st.Help.Sep
	return m
}

// Observer is the engine observer the console listens to (already set on
// Options.Engine when one was given).
func (m *Model) Observer() queue.Observer { return m.feed }

// RuleScope is where a rule added with A applies.
type RuleScope int

// The scopes, narrowest last.
const (
	ScopeEverywhere RuleScope = iota // the person's policy file
	ScopeProject                     // that file, limited to the request's project
	ScopeSession                     // a trust for the request's agent session
)

func (s RuleScope) String() string {
	return [...]string{"everywhere", "this project", "this agent session"}[s]
}

// UndoPlan is what undoing a run would do, as the console shows it.
type UndoPlan struct {
	ID        string   // the run (or undo) undone
	Files     []string // the files it would restore, absolute
	Diff      string   // what undoing applies
	Conflicts []string // files changed again since the run
	// Since is how the conflicting files changed since the run.
	Since string
	// Shared are files of Files that a run which ran at the same time in
	// the same project (SharedWith) changed too: y leaves them as they
	// are, F restores them as well. SharedDiff is what that applies.
	Shared, SharedWith []string
	SharedDiff         string
	// Token is the caller's, for ApplyUndo.
	Token any
}

// Settings are the console's options a reloaded configuration changes.
type Settings struct {
	Bell, Notify bool
	Grace        time.Duration // 0: the default
	// Sandbox and SandboxOff as in Options.
	Sandbox    string
	SandboxOff bool
}

// Reconfigured tells the console that its configuration was read again:
// s is applied; text is said in the status line. Safe from any goroutine.
func (m *Model) Reconfigured(s Settings, text string) {
	m.feed.push(reconfigured{settings: &s, text: text})
}

// ConfigProblem tells the console why its configuration file, changed,
// does not load (the last good one stays in force), or, with err nil,
// that it loads again. Safe from any goroutine.
func (m *Model) ConfigProblem(err error) {
	p := ""
	if err != nil {
		p = err.Error()
	}
	m.feed.push(reconfigured{problem: p})
}

// SpoolProblem tells the console why its spool cannot be written (a
// read-only or full file system: nothing can be claimed nor answered), in
// a few words the header shows after "SPOOL " ("READ-ONLY: remount DIR
// read-write"), or, with err nil, that it can be again. Safe from any
// goroutine.
func (m *Model) SpoolProblem(err error) {
	p := ""
	if err != nil {
		p = err.Error()
	}
	m.feed.push(spoolProblem{problem: p})
}

// LinkChanged tells the console that its Fleet's Link changed, to redraw
// the header. Safe from any goroutine.
func (m *Model) LinkChanged() { m.feed.push(linkChanged{}) }

// Logged hands the console events read from the audit log, in log order,
// for History: the last ones at start, then each as it lands. Safe from
// any goroutine.
func (m *Model) Logged(evs []queue.Event) { m.feed.Logged(evs) }

// Wait waits for the approvals, denials and kills the person started.
func (m *Model) Wait() { m.d.wg.Wait() }

// Running reports how many runs this console is watching.
func (m *Model) Running() int {
	n := 0
	for _, r := range m.history {
		if r.running() {
			n++
		}
	}
	return n
}

// Init implements tea.Model.
func (m *Model) Init() tea.Cmd {
	return tea.Batch(m.feed.next, tea.RequestBackgroundColor, m.readTrusts(0, true))
}

// PaneSize is the output pane's inner size, for the pty of a new run. It
// is safe to call from any goroutine.
func (m *Model) PaneSize() (rows, cols uint16) { return m.d.paneSize() }
