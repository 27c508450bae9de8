package tui

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/themes"
)

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
	if d.opt.Terminal != nil {
		d.opt.Terminal.Input(id, p)
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
		for _, b := range []*key.Binding{&h.Edit, &h.Trust, &h.ApproveUnconfined, &h.Kill, &h.Undo} {
			b.SetEnabled(false)
		}
		// Rules are each box's own: over the hub A only allows a
		// connection for the rest of its run.
		h.ApproveRule.SetHelp(h.ApproveRule.Help().Key, "a host for its run (rules: on the box)")
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
