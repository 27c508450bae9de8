package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Warmer is a Runner that can prepare for a request a person is about to
// decide (exec.Actor reads the project into its checkpoint store, so that
// the run's first checkpoint is quick).
type Warmer interface {
	Warm(req *Request, v Verdict)
}

// Judge gives the policy's verdict on a request; Verdict.Action is
// "allow", "ask" or "deny".
type Judge interface {
	Judge(req *Request) Verdict
}

// Runner carries out a claimed request in execute mode: it runs the
// command or applies the file change. Cancelling ctx stops it (status
// killed). It returns the result (done, timeout, killed or failed) and the
// hex SHA-256 of the output it logged.
type Runner interface {
	Run(ctx context.Context, req *Request, opt RunOptions) (Result, string)
}

// RunOptions say how a Runner carries out one request.
type RunOptions struct {
	// LogPath is out/<id>.log, where every byte of output goes.
	LogPath string
	// Output, when not nil, receives the output as it comes.
	Output func([]byte)
	// Verdict is what let the request run; its Profile is the
	// confinement the command gets.
	Verdict Verdict
	// Unconfined runs the command without confinement: a person chose it.
	Unconfined bool
	// Approved says a person approved the request (the policy did not
	// allow it alone): what a confined run may read follows (a project's
	// secret files are hidden from runs nobody approved).
	Approved bool
	// Waiting, when set, hears that the run waits for its turn behind
	// run holder, which changes files in the same project, and with ""
	// that it waits no more.
	Waiting func(holder string)
	// GoAhead, when not nil, is closed when a person lets the run go
	// ahead without waiting for its turn (Engine.GoAhead).
	GoAhead <-chan struct{}

	// scope is a connect request's allow's reach (the engine's own: a
	// connect request is answered, never run).
	scope Scope
}

// TurnObserver is what an Observer may also be: told when a run it was
// told Started waits for its turn behind another (holder) and, with "",
// when it goes ahead.
type TurnObserver interface {
	Waits(id, holder string)
}

// ResultObserver is what an Observer may also be: told when a run it was
// told Started has ended but its result cannot be written yet (why: a
// full disk, a read-only spool), before Finished.
type ResultObserver interface {
	ResultWaits(id, why string)
}

// Engine is the one path every request takes, whoever drives it (the
// console, sluice serve, sluice approve): a verdict for each pending
// request; allow claims and runs it, deny claims and refuses it, ask waits
// for a person. Every step is recorded before it is acted on.
type Engine struct {
	Spool    *Spool
	Judge    Judge
	Runner   Runner
	Recorder Recorder
	// MaxAuto bounds auto-allowed runs at once (default 4); more wait in
	// the order they came.
	MaxAuto int
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logf reports what the engine does (serve logs it to stderr).
	Logf func(format string, args ...any)
	// Observer, when set, hears what the engine does, for a front end to
	// show (the console).
	Observer Observer
	// AuditPath is the file Recorder writes, published in the spool for
	// writers to check decisions against (Spool.AuditPath).
	AuditPath string

	// queued holds the ids of the requests shown to a person whose
	// queued event is recorded (guarded by judgeMu): seen again (the file
	// rewritten), they are not queued twice. A request the policy decides
	// records queued with its decision and leaves new/ at once.
	queued map[string]bool

	// Judging happens off Serve's goroutine, at most maxJudges at once,
	// so that one slow verdict does not hold the requests behind it.
	// judgeMu guards judging (ids being judged) and goneWhile (ids that
	// left new/ meanwhile: their verdict is not acted on).
	judgeMu   sync.Mutex
	judging   map[string]bool
	goneWhile map[string]bool

	mu      sync.Mutex
	running map[string]context.CancelFunc // ids being run, for Kill
	killers map[string]string             // who killed a run, for its audit line
	aheads  map[string]chan struct{}      // ids being run, for GoAhead
}

// GoAhead lets request id, which this engine runs and which waits for
// its turn behind another run in the same project, start now; both runs'
// results then name each other (Checkpoint.Overlapped). It reports
// whether this engine is running id.
func (e *Engine) GoAhead(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch, ok := e.aheads[id]
	if ok && ch != nil {
		close(ch)
		e.aheads[id] = nil
	}
	return ok
}

// Kill stops request id if this engine is running it (status killed) and
// reports whether it was.
func (e *Engine) Kill(id string) bool { return e.KillAs(id, "") }

// KillAs is Kill for actor, the person the audit log names as having
// stopped the run ("" leaves it to the run's decider).
func (e *Engine) KillAs(id, actor string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	stop, ok := e.running[id]
	if ok {
		if actor != "" {
			if e.killers == nil {
				e.killers = map[string]string{}
			}
			e.killers[id] = actor
		}
		stop()
	}
	return ok
}

// KillAllAs stops every run this engine is carrying out, for actor (a
// console quitting); it returns how many it stopped.
func (e *Engine) KillAllAs(actor string) int {
	e.mu.Lock()
	ids := make([]string, 0, len(e.running))
	for id := range e.running {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	n := 0
	for _, id := range ids {
		if e.KillAs(id, actor) {
			n++
		}
	}
	return n
}

// killer is who killed request id's run, once: "" if nobody named.
func (e *Engine) killer(id string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := e.killers[id]
	delete(e.killers, id)
	return k
}

// track makes a run killable by id, and able to go ahead of its turn
// (the channel); the returned func forgets it.
func (e *Engine) track(ctx context.Context, id string) (context.Context, <-chan struct{}, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ahead := make(chan struct{})
	e.mu.Lock()
	if e.running == nil {
		e.running = map[string]context.CancelFunc{}
		e.aheads = map[string]chan struct{}{}
	}
	e.running[id], e.aheads[id] = cancel, ahead
	e.mu.Unlock()
	return ctx, ahead, func() {
		e.mu.Lock()
		delete(e.running, id)
		delete(e.aheads, id)
		e.mu.Unlock()
		cancel()
	}
}

// Observer hears what an engine does. Its methods are called from the
// engine's goroutines, several at once; they must return promptly.
type Observer interface {
	// Pending: req waits for a person (the policy asks).
	Pending(req *Request, v Verdict)
	// Gone: request id is no longer pending here: acted on by another
	// process, withdrawn, expired or refused as invalid.
	Gone(id string, op WatchOp)
	// Started: req, claimed, is about to run (or be applied). The
	// returned function, if not nil, receives its output as it comes.
	Started(req *Request, v Verdict, by Decider) func([]byte)
	// Finished: req was answered with res (run, denied or decided).
	Finished(req *Request, res Result)
}

// ErrPolicyDenies refuses to approve a request the policy denies.
var ErrPolicyDenies = errors.New("queue: the policy denies this request")

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Engine) logf(format string, args ...any) {
	if e.Logf != nil {
		e.Logf(format, args...)
	}
}

// record writes an audit event; the step it names happens only if it
// succeeded.
func (e *Engine) record(name EventName, req *Request, actor string, fill func(*Event)) error {
	ev := NewEvent(name, req)
	ev.Actor, ev.Spool = actor, e.Spool.Dir()
	if fill != nil {
		fill(&ev)
	}
	if err := e.Recorder.Record(ev); err != nil {
		return fmt.Errorf("queue: audit %s %s: %w", name, ev.ID, err)
	}
	return nil
}

// Serve watches the spool and acts on what the policy decides alone
// until ctx ends; then it stops the runs it started (answered killed) and
// returns. ask requests are left pending for a person.
func (e *Engine) Serve(ctx context.Context) error {
	if e.MaxAuto <= 0 {
		e.MaxAuto = 4
	}
	if e.Spool.Recorder == nil {
		// The results the spool writes on its own are audited too.
		e.Spool.Recorder = e.Recorder
	}
	// A spool that cannot be written (read-only, full) is said at once,
	// with what to do: every claim and result would fail on it. The
	// engine serves anyway and acts once it can.
	if err := e.Spool.CheckWritable(); err != nil {
		e.logf("%v", err)
	}
	// Writers that must not wait in vain (agent hooks) look for this.
	defer e.present(ctx)()
	e.judgeMu.Lock()
	e.queued, e.judging, e.goneWhile = map[string]bool{}, map[string]bool{}, map[string]bool{}
	e.judgeMu.Unlock()
	runCtx, stopRuns := context.WithCancel(context.Background())
	// Seen requests go to maxJudges judges; what they allow to MaxAuto
	// runners, what asks a person to one recorder, which writes the
	// queued lines gathered meanwhile with one fsync. The queues hold
	// pointers: 10,000 requests pending at once cost little to hold.
	toJudge := make(chan *Request, 1<<14)
	work := make(chan *judged, 1<<16)
	asks := make(chan *judged, 1<<14)
	var workers, judges, recorder sync.WaitGroup
	for range e.MaxAuto {
		workers.Go(func() {
			for j := range work {
				e.autoRun(runCtx, j)
			}
		})
	}
	for range maxJudges {
		judges.Go(func() {
			for req := range toJudge {
				e.judge(ctx, req, work, asks)
			}
		})
	}
	recorder.Go(func() { e.recordAsks(asks) })
	defer func() {
		stopRuns() // first: a worker must not start a new run while we stop
		close(toJudge)
		judges.Wait()
		close(asks)
		recorder.Wait()
		close(work)
		workers.Wait()
	}()
	for ev := range e.Spool.Watch(ctx, WatchOptions{Now: e.Now}) {
		switch ev.Op {
		case Pending:
			e.pending(ctx, ev.Request, toJudge)
		case Gone:
			e.gone(ev.ID, ev.Op)
		case Invalid:
			e.gone(ev.ID, ev.Op)
			e.logf("invalid %s: %v", ev.ID, ev.Err)
		case Expired:
			e.gone(ev.ID, ev.Op)
			e.logf("expired %s", ev.ID)
		case Interrupted:
			e.logf("interrupted %s (its actor died)", ev.ID)
		case Problem:
			e.logf("%v", ev.Err)
		}
	}
	return ctx.Err()
}

// presentRetry is how often an engine that could not mark itself
// present (a read-only spool) tries again.
const presentRetry = 2 * time.Second

// present marks the engine present on the spool (Spool.Present) until
// the returned function is called. Where it cannot yet (a read-only
// spool), it says why once and tries again every presentRetry until it
// can or ctx ends: an engine that serves a spool once it is writable
// again, unseen, would have the hooks and the MCP server withdraw what it
// would serve.
func (e *Engine) present(ctx context.Context) (release func()) {
	rel, err := e.Spool.Present(e.AuditPath)
	if err == nil {
		return rel
	}
	e.logf("%v", err)
	var held func()
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(presentRetry)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-stop:
				return
			case <-tick.C:
			}
			if rel, err := e.Spool.Present(e.AuditPath); err == nil {
				held = rel
				e.logf("serving %s again", e.Spool.Dir())
				return
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		if held != nil {
			held()
		}
	}
}

// denyReason is what the agent is told when the policy denies: the
// reasons of the verdict (the result says who decided).
func denyReason(v Verdict) string {
	if len(v.Reasons) == 0 {
		return "the policy denies it"
	}
	return strings.Join(v.Reasons, "; ")
}

// maxJudges bounds the verdicts worked out at once.
const maxJudges = 4

// judged is a request with the verdict it was judged to, on its way to
// be acted on. queued says that its queued event is still to be recorded:
// it goes into the audit log with the first step taken on the request
// (one fsync for both).
type judged struct {
	req    *Request
	v      Verdict
	at     time.Time
	queued bool
}

// pending hands a newly seen request to the judges.
func (e *Engine) pending(ctx context.Context, req *Request, toJudge chan<- *Request) {
	e.judgeMu.Lock()
	if e.judging[req.ID] {
		e.judgeMu.Unlock()
		return // seen again while its verdict is being worked out
	}
	e.judging[req.ID] = true
	delete(e.goneWhile, req.ID)
	e.judgeMu.Unlock()
	select {
	case toJudge <- req:
	case <-ctx.Done():
		e.doneJudging(req.ID)
	}
}

// judge works out req's verdict and acts on it: allow and deny at once
// (queued goes with the decision), ask through the recorder.
func (e *Engine) judge(ctx context.Context, req *Request, work chan<- *judged, asks chan<- *judged) {
	if ctx.Err() != nil {
		e.doneJudging(req.ID)
		return
	}
	e.judgeMu.Lock()
	needQueued := !e.queued[req.ID]
	gone := e.goneWhile[req.ID]
	e.judgeMu.Unlock()
	if gone {
		e.doneJudging(req.ID) // it left new/ while it waited for a judge
		return
	}
	j := &judged{req: req, v: e.Judge.Judge(req), at: e.now(), queued: needQueued}
	if !j.v.Action.Decides() {
		// Shown to a person once its queued line is recorded.
		asks <- j
		return
	}
	if e.doneJudging(req.ID) {
		return
	}
	e.decided(ctx, j, work)
}

// recordAsks records the queued lines of the requests that ask a person,
// as many at once as have gathered (one fsync), and then shows each:
// its Pending comes after its queued line, and before any Gone for it
// (gone waits for judgeMu).
func (e *Engine) recordAsks(asks <-chan *judged) {
	batch := make([]*judged, 0, 256)
	events := make([]Event, 0, 256)
	// Asks whose queued line could not be recorded (the audit log
	// failing: a full disk, say) stay in judging and are tried again a
	// moment later: the watcher would not show an unchanged file again.
	var retry []*judged
	for {
		batch = append(batch[:0], retry...)
		retry = retry[:0]
		if len(batch) == 0 {
			j, ok := <-asks
			if !ok {
				return
			}
			batch = append(batch, j)
		} else {
			select {
			case j, ok := <-asks:
				if !ok {
					e.dropJudging(batch) // shutting down: left pending
					return
				}
				batch = append(batch, j)
			case <-time.After(askRetry):
			}
		}
	gather:
		for len(batch) < cap(batch) {
			select {
			case j, ok := <-asks:
				if !ok {
					break gather
				}
				batch = append(batch, j)
			default:
				break gather
			}
		}
		events = events[:0]
		e.judgeMu.Lock()
		for _, j := range batch {
			if j.queued && !e.goneWhile[j.req.ID] {
				// An ask's queued line carries its verdict: what a person
				// is shown, and what a fleet hub publishes.
				ev := NewEvent(EventQueued, j.req)
				v := j.v
				ev.Verdict = &v
				events = append(events, ev)
			}
		}
		e.judgeMu.Unlock()
		err := e.recordAll(events)
		if err != nil {
			e.logf("queue: audit %s: %v (tried again in %s)", EventQueued, err, askRetry)
		}
		for _, j := range batch {
			e.judgeMu.Lock()
			switch {
			case e.goneWhile[j.req.ID]:
				e.endJudging(j.req.ID)
			case err != nil && j.queued:
				retry = append(retry, j) // unrecorded: not shown yet
			default:
				e.endJudging(j.req.ID)
				e.queued[j.req.ID] = true
				e.ask(j.req, j.v)
			}
			e.judgeMu.Unlock()
		}
	}
}

// askRetry is how long an ask whose queued line failed to record waits
// before the next try.
const askRetry = time.Second

// dropJudging ends the judging of batch's requests, unshown.
func (e *Engine) dropJudging(batch []*judged) {
	for _, j := range batch {
		e.doneJudging(j.req.ID)
	}
}

// doneJudging ends req's judging and reports whether it left new/
// meanwhile.
func (e *Engine) doneJudging(id string) (gone bool) {
	e.judgeMu.Lock()
	defer e.judgeMu.Unlock()
	return e.endJudging(id)
}

// endJudging is doneJudging with judgeMu held.
func (e *Engine) endJudging(id string) (gone bool) {
	delete(e.judging, id)
	gone = e.goneWhile[id]
	delete(e.goneWhile, id)
	return gone
}

// decided acts on a verdict that decides: allow queues the run, deny
// answers.
func (e *Engine) decided(ctx context.Context, j *judged, work chan<- *judged) {
	if j.v.Action == ActionDeny {
		e.autoDeny(j)
		return
	}
	select {
	case work <- j:
	case <-ctx.Done():
	}
}

// ask leaves req for a person, its queued event recorded.
func (e *Engine) ask(req *Request, v Verdict) {
	e.logf("ask %s: %s (%s, %s)", req.ID, req.Summary(), v.Category, v.Risk)
	if e.Observer != nil {
		e.Observer.Pending(req, v)
	}
	if w, ok := e.Runner.(Warmer); ok && req.EffectiveMode() == ModeExecute {
		go w.Warm(req, v) // while the person reads it
	}
}

// askLate shows a person a request that was judged allow but, judged
// again after waiting for a runner, asks: with the same care as
// recordAsks, since it left judging meanwhile (a Gone for it may have
// come and gone).
func (e *Engine) askLate(j *judged) {
	id := j.req.ID
	e.judgeMu.Lock()
	if e.judging[id] {
		e.judgeMu.Unlock()
		return // seen again and being judged: that verdict shows it
	}
	e.judging[id] = true
	delete(e.goneWhile, id)
	needQueued := j.queued && !e.queued[id]
	e.judgeMu.Unlock()
	// A Gone that came before judging was set is not in goneWhile: look.
	if _, err := os.Lstat(e.Spool.RequestPath(id)); err != nil {
		e.doneJudging(id)
		return
	}
	if needQueued {
		v := j.v
		if err := e.record(EventQueued, j.req, "", func(x *Event) { x.Verdict = &v }); err != nil {
			e.logf("%v", err)
			e.doneJudging(id)
			return
		}
	}
	e.judgeMu.Lock()
	if !e.endJudging(id) {
		e.queued[id] = true
		e.ask(j.req, j.v)
	}
	e.judgeMu.Unlock()
}

// recordSteps records evs, the queued event first when j's is still to
// be recorded, with one fsync where the Recorder can batch.
func (e *Engine) recordSteps(j *judged, req *Request, evs ...Event) error {
	if j.queued {
		evs = append([]Event{NewEvent(EventQueued, req)}, evs...)
	}
	if err := e.recordAll(evs); err != nil {
		return fmt.Errorf("queue: audit %s %s: %w", evs[len(evs)-1].Event, req.ID, err)
	}
	return nil
}

// recordAll records evs in order, with one fsync where the Recorder can
// batch; on an error the steps they record must not happen.
func (e *Engine) recordAll(evs []Event) error {
	for i := range evs {
		if evs[i].Spool == "" {
			evs[i].Spool = e.Spool.Dir()
		}
	}
	if br, ok := e.Recorder.(BatchRecorder); ok && len(evs) > 1 {
		return br.RecordAll(evs)
	}
	for _, ev := range evs {
		if err := e.Recorder.Record(ev); err != nil {
			return err
		}
	}
	return nil
}

// gone forgets a request that left new/ and tells the observer.
func (e *Engine) gone(id string, op WatchOp) {
	e.judgeMu.Lock()
	delete(e.queued, id)
	if e.judging[id] {
		e.goneWhile[id] = true
	}
	e.judgeMu.Unlock()
	if e.Observer != nil {
		e.Observer.Gone(id, op)
	}
}

// finished tells the observer how req ended.
func (e *Engine) finished(req *Request, res Result) {
	if e.Observer != nil {
		e.Observer.Finished(req, res)
	}
}

// claimAs claims req and checks that the claimed file is the one judged;
// if an agent swapped it meanwhile, the request is refused rather than
// acted on unjudged.
func (e *Engine) claimAs(j *judged) (*Claim, Verdict, bool) {
	req, v := j.req, j.v
	c, err := e.Spool.ClaimRead(req, e.now())
	if err != nil {
		return nil, v, false // another process acted on it, or it expired
	}
	if !c.Request.Same(req) {
		nv := e.Judge.Judge(c.Request)
		if nv.Action != v.Action {
			reason := "the request file changed while it was being judged; submit it again"
			denied := NewEvent(EventDenied, c.Request)
			denied.Actor, denied.Verdict, denied.Status, denied.Reason = string(ByPolicy), &nv, StatusDenied, reason
			if e.recordSteps(j, c.Request, denied) != nil {
				c.Close()
				return nil, v, false
			}
			_ = c.Finish(Result{Status: StatusDenied, Decision: Deny, DecidedBy: ByPolicy, Reason: reason, Verdict: &nv})
			return nil, v, false
		}
		v = nv
	}
	return c, v, true
}

func (e *Engine) autoDeny(j *judged) {
	req := j.req
	c, v, ok := e.claimAs(j)
	if !ok {
		return
	}
	reason := denyReason(v)
	denied := NewEvent(EventAutoDenied, c.Request)
	denied.Actor, denied.Verdict, denied.Status, denied.Reason = string(ByPolicy), &v, StatusDenied, reason
	if err := e.recordSteps(j, c.Request, denied); err != nil {
		e.logf("%v", err)
		c.Close()
		return
	}
	status := StatusDenied
	if c.Request.EffectiveMode() == ModeDecide {
		status = StatusDecided
	}
	res := Result{Status: status, Decision: Deny, DecidedBy: ByPolicy, Reason: reason, Verdict: &v}
	if err := c.Finish(res); err != nil {
		e.logf("%v", err)
	}
	e.finished(c.Request, res)
	e.logf("denied %s by policy: %s", req.ID, req.Summary())
}

// rejudgeAfter is how long a verdict waiting for a free worker stays
// good: one that waited longer behind other runs is taken again.
const rejudgeAfter = 100 * time.Millisecond

func (e *Engine) autoRun(ctx context.Context, j *judged) {
	req := j.req
	if ctx.Err() != nil {
		return // shutting down: leave it pending for the next engine
	}
	if e.now().Sub(j.at) > rejudgeAfter {
		// It waited behind others: the policy may have changed since.
		j.v, j.at = e.Judge.Judge(req), e.now()
		if !j.v.Action.Allows() {
			if j.v.Action == ActionDeny {
				e.autoDeny(j)
				return
			}
			e.askLate(j)
			return
		}
	}
	c, v, ok := e.claimAs(j)
	if !ok {
		return
	}
	allowed := NewEvent(EventAutoAllowed, c.Request)
	allowed.Actor, allowed.Verdict = string(ByPolicy), &v
	steps := []Event{allowed}
	started := false
	if c.Request.EffectiveMode() == ModeExecute {
		// Nothing happens between the steps: one sync for all.
		st := NewEvent(EventStarted, c.Request)
		st.Actor = string(ByPolicy)
		steps, started = append(steps, st), true
	}
	if err := e.recordSteps(j, c.Request, steps...); err != nil {
		e.logf("%v", err)
		c.Close()
		return
	}
	res, err := e.actRecorded(ctx, c, v, ByPolicy, string(ByPolicy), RunOptions{}, false, started)
	if err != nil {
		e.logf("%v", err)
		return
	}
	e.logf("ran %s by policy: %s -> %s", req.ID, req.Summary(), res.Status)
}

// act carries out a claimed, allowed request: decide mode answers at
// once; execute mode records started, runs, records how it ended, and
// answers.
func (e *Engine) act(ctx context.Context, c *Claim, v Verdict, by Decider, actor string, opt RunOptions, edited bool) (Result, error) {
	return e.actRecorded(ctx, c, v, by, actor, opt, edited, false)
}

// actRecorded is act, told whether the started event is recorded already.
// opt's Output and Unconfined come from the caller; the rest is filled in.
func (e *Engine) actRecorded(ctx context.Context, c *Claim, v Verdict, by Decider, actor string, opt RunOptions, edited, startedRecorded bool) (Result, error) {
	req := c.Request
	ranAs := ""
	if edited {
		ranAs = req.Command
	}
	if req.EffectiveMode() == ModeDecide {
		res := Result{Status: StatusDecided, Decision: Allow, DecidedBy: by, Verdict: &v, Command: ranAs}
		if req.Kind == KindConnect {
			res.Scope = opt.scope
		}
		err := c.Finish(res)
		e.finished(req, res)
		return res, err
	}
	if !startedRecorded {
		if err := e.record(EventStarted, req, actor, nil); err != nil {
			c.Close()
			return Result{}, err
		}
	}
	if e.Observer != nil {
		if watch := e.Observer.Started(req, v, by); watch != nil {
			opt.Output = tee(opt.Output, watch)
		}
	}
	opt.LogPath, opt.Verdict, opt.Approved = e.Spool.LogPath(req.ID), v, by != ByPolicy
	if to, ok := e.Observer.(TurnObserver); ok {
		opt.Waiting = func(holder string) { to.Waits(req.ID, holder) }
	}
	runCtx, ahead, done := e.track(ctx, req.ID)
	opt.GoAhead = ahead
	res, sum := e.Runner.Run(runCtx, req, opt)
	done() // first: no KillAs can name a killer after this
	killer := e.killer(req.ID)
	res.Decision, res.DecidedBy, res.Verdict, res.Command = Allow, by, &v, ranAs
	name := EventFinished
	switch res.Status {
	case StatusTimeout:
		name = EventTimeout
	case StatusKilled:
		name = EventKilled
		if killer != "" {
			actor = killer
			if res.Reason == "" {
				res.Reason = "killed by " + killer
			}
		}
	}
	if err := e.record(name, req, actor, func(x *Event) {
		x.Status, x.Reason, x.ExitCode, x.DurationMS, x.OutputSHA256 = res.Status, res.Reason, res.ExitCode, res.DurationMS, sum
		x.Sandbox, x.ChangedFiles, x.Checkpoint, x.Network = res.Sandbox, res.ChangedFiles, res.Checkpoint, res.Network
	}); err != nil {
		// The command ran; its answer still goes back, and the log's gap
		// is what verify will show.
		e.logf("%v", err)
	}
	// The run happened: its result, output tail and all, is kept until it
	// can be written (not left to a recovery that has only the log).
	err := c.FinishPatient(res, ctx.Done(), func(err error) {
		e.logf("%v", err)
		if o, ok := e.Observer.(ResultObserver); ok {
			o.ResultWaits(req.ID, err.Error())
		}
		// What the runner keeps between runs may hold the very space
		// the result waits for (a deleted file's inode).
		if r, ok := e.Runner.(interface{ ReleaseIdle() }); ok {
			r.ReleaseIdle()
		}
	})
	e.finished(req, res)
	return res, err
}

// tee sends output to both a and b (either may be nil).
func tee(a, b func([]byte)) func([]byte) {
	if a == nil {
		return b
	}
	return func(p []byte) { a(p); b(p) }
}

// Approve claims request id for a person and carries it out, streaming the
// output to output when not nil. A request the policy denies is refused
// (ErrPolicyDenies): approving cannot override a deny rule.
func (e *Engine) Approve(ctx context.Context, id, actor string, output func([]byte)) (Result, error) {
	return e.ApproveWith(ctx, id, actor, nil, output)
}

// ApproveWith is Approve that calls claimed with the request as claimed
// (what will run), before it is judged and run.
func (e *Engine) ApproveWith(ctx context.Context, id, actor string, claimed func(*Request), output func([]byte)) (Result, error) {
	return e.ApproveAs(ctx, id, Approval{Actor: actor, Claimed: claimed, Output: output})
}

// Approval is what a person approved, and how to follow it.
type Approval struct {
	Actor string // the person, as the audit log names them
	// Command, when not empty, replaces an exec request's command: the
	// person edited it. The edited command is judged, recorded (with the
	// original as edited_from) and run, and the result names it.
	Command string
	// Claimed, when not nil, is called with the request as claimed (what
	// will run), before it is judged and run.
	Claimed func(*Request)
	// Output, when not nil, receives the output as it comes.
	Output func([]byte)
	// Shown, when not nil, is the request as the person saw it. If the
	// claimed file is not byte for byte the one shown (an agent swapped
	// it), the request is refused, not run: ErrChangedSinceShown.
	Shown *Request
	// ShownDigest, when not empty, is the Digest of the request as the
	// person saw it elsewhere (at a console of the hub): the same check
	// as Shown.
	ShownDigest string
	// Unconfined runs the command without the confinement its verdict
	// would give it; the approval is audited with sandbox "unconfined".
	Unconfined bool
	// Scope is how far the allow of a connect request reaches: ScopeRun
	// for the rest of the asking run; empty or ScopeOnce for the
	// connections waiting on the question. Other kinds ignore it.
	Scope Scope
	// Rule, when not empty, names a rule the person kept with the
	// approval ("network_allow \"host\" added to FILE"): the approved
	// line records it as its reason.
	Rule string
}

// Unconfined is the sandbox of a run a person chose to run without
// confinement.
const Unconfined = "unconfined"

// ErrChangedSinceShown refuses a request whose file changed between the
// moment a person saw it and the claim.
var ErrChangedSinceShown = errors.New("queue: the request changed after it was shown; it was refused")

// ApproveAs claims request id for a person and carries it out as a says.
// A request the policy denies is refused (ErrPolicyDenies).
func (e *Engine) ApproveAs(ctx context.Context, id string, a Approval) (Result, error) {
	c, err := e.Spool.Claim(id, e.now())
	if err != nil {
		return Result{}, err
	}
	actor, output := a.Actor, a.Output
	if (a.Shown != nil && !c.Request.Same(a.Shown)) || (a.ShownDigest != "" && c.Request.Digest() != a.ShownDigest) {
		reason := "the request file changed after a person was shown it; submit it again"
		if err := e.record(EventDenied, c.Request, actor, func(x *Event) { x.Status, x.Reason = StatusDenied, reason }); err != nil {
			c.Close()
			return Result{}, err
		}
		res := Result{Status: StatusDenied, Decision: Deny, DecidedBy: ByHuman, Reason: reason}
		err := c.Finish(res)
		e.finished(c.Request, res)
		return res, errors.Join(ErrChangedSinceShown, err)
	}
	var editedFrom string
	if a.Command != "" && c.Request.Kind == KindExec && a.Command != c.Request.Command {
		edited := *c.Request
		editedFrom, edited.Command = edited.Command, a.Command
		c.Request = &edited
	}
	if a.Claimed != nil {
		a.Claimed(c.Request)
	}
	v := e.Judge.Judge(c.Request)
	if v.Action == ActionDeny {
		reason := denyReason(v)
		if err := e.record(EventAutoDenied, c.Request, string(ByPolicy), func(x *Event) { x.Verdict, x.Status, x.Reason = &v, StatusDenied, reason }); err != nil {
			c.Close()
			return Result{}, err
		}
		res := Result{Status: StatusDenied, Decision: Deny, DecidedBy: ByPolicy, Reason: reason, Verdict: &v}
		if err := c.Finish(res); err != nil {
			return res, err
		}
		e.finished(c.Request, res)
		return res, fmt.Errorf("%w: %s", ErrPolicyDenies, reason)
	}
	scope := Scope("")
	if c.Request.Kind == KindConnect {
		scope = ScopeOnce
		if a.Scope == ScopeRun {
			scope = ScopeRun
		}
	}
	if err := e.record(EventApproved, c.Request, actor, func(x *Event) {
		x.Verdict, x.EditedFrom, x.Scope, x.Reason = &v, editedFrom, scope, a.Rule
		if a.Unconfined && c.Request.Kind == KindExec {
			x.Sandbox = Unconfined
		}
	}); err != nil {
		c.Close()
		return Result{}, err
	}
	return e.act(ctx, c, v, ByHuman, actor, RunOptions{Output: output, Unconfined: a.Unconfined, scope: scope}, editedFrom != "")
}

// Deny claims request id for a person and refuses it with reason; the
// denial is recorded before the answer is written.
func (e *Engine) Deny(id, actor, reason string) (Result, error) {
	c, err := e.Spool.Claim(id, e.now())
	if err != nil {
		return Result{}, err
	}
	if reason == "" {
		reason = "denied by a person"
	}
	if err := e.record(EventDenied, c.Request, actor, func(x *Event) { x.Status, x.Reason = StatusDenied, reason }); err != nil {
		c.Close()
		return Result{}, err
	}
	res := Result{Status: StatusDenied, Decision: Deny, DecidedBy: ByHuman, Reason: reason}
	if c.Request.EffectiveMode() == ModeDecide {
		res.Status = StatusDecided
	}
	err = c.Finish(res)
	e.finished(c.Request, res)
	return res, err
}
