//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// Pending is a request 'sluice ls --json' lists as pending.
type Pending struct {
	ID      string
	Command string
	Note    string
	Request *queue.Request // the whole request, as ls --json prints it
}

// A Decision is one 'sluice approve' or 'sluice deny' a Person ran.
type Decision struct {
	ID     string
	Args   []string // what it ran: approve ID, deny --reason R ID
	Exit   int
	Output string // stdout and stderr
	Took   time.Duration
}

// Refused reports whether the decision was a deny.
func (d Decision) Refused() bool { return len(d.Args) > 0 && d.Args[0] == "deny" }

// A Person is the scripted person at a box: it polls 'sluice ls --json'
// and, for each pending request it has not seen, runs the sluice
// commands Decide gives (each in its own process, concurrently), the way
// a person types 'sluice approve ID' in a terminal.
type Person struct {
	Sluice func(ctx context.Context, args ...string) *exec.Cmd // a sluice process of the box
	Poll   time.Duration                                       // between polls that found nothing new
	// Decide gives the commands for a pending request, asked once per
	// request: none leaves it undecided, several run each (a duplicate
	// approval).
	Decide func(Pending) [][]string
	// Limit is how many decisions run at once (0: no limit), the way a
	// few people at their terminals decide.
	Limit int
	// Grace leaves a request to later polls until it has waited this long
	// (by its created_at): the engine decides what its policy decides
	// alone, and a person sees what it leaves.
	Grace time.Duration
	// Edit approves a request with another command in place of its own,
	// as the console's edit does (no sluice command does it); Decide asks
	// for it with EditTo. Its error is the decision's output, exit 1.
	Edit func(ctx context.Context, id, command string) error

	mu        sync.Mutex
	decisions []Decision
	polls     int
	failures  Failures
}

// lsEntry is the part of a 'sluice ls --json' entry a Person reads.
type lsEntry struct {
	ID      string         `json:"id"`
	State   string         `json:"state"`
	Request *queue.Request `json:"request"`
}

// editVerb is the first word of what EditTo gives.
const editVerb = "edit"

// EditTo is what Decide gives to approve a request with command in place
// of its own (Person.Edit).
func EditTo(command string) []string { return []string{editVerb, command} }

// Run decides until ctx ends, then waits for the commands it started.
func (p *Person) Run(ctx context.Context) {
	seen := map[string]bool{}
	var slots chan struct{}
	if p.Limit > 0 {
		slots = make(chan struct{}, p.Limit)
	}
	var acts sync.WaitGroup
	defer acts.Wait()
	for ctx.Err() == nil {
		out, err := p.Sluice(ctx, "ls", "--json").Output()
		if ctx.Err() != nil {
			return
		}
		var list []lsEntry
		if err == nil {
			err = json.Unmarshal(out, &list)
		}
		p.mu.Lock()
		p.polls++
		if err != nil {
			p.failures.Addf("sluice ls --json: %v", err)
		}
		p.mu.Unlock()
		fresh := 0
		for _, e := range list {
			if e.State != "pending" || e.Request == nil || seen[e.ID] {
				continue
			}
			if p.Grace > 0 && time.Since(e.Request.CreatedAt) < p.Grace {
				continue
			}
			seen[e.ID] = true
			fresh++
			for _, args := range p.Decide(Pending{ID: e.ID, Command: e.Request.Command, Note: e.Request.Note, Request: e.Request}) {
				acts.Go(func() {
					if slots != nil {
						slots <- struct{}{}
						defer func() { <-slots }()
					}
					p.run(e.ID, args)
				})
			}
		}
		if fresh == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(p.Poll):
			}
		}
	}
}

// run runs one decision to its end, whatever happens to the Person's
// context: a decision once made is carried out.
func (p *Person) run(id string, args []string) {
	start := time.Now()
	if len(args) == 2 && args[0] == editVerb {
		d := Decision{ID: id, Args: args}
		if p.Edit == nil {
			d.Exit, d.Output = 1, "the person cannot edit (no Person.Edit)"
		} else if err := p.Edit(context.Background(), id, args[1]); err != nil {
			d.Exit, d.Output = 1, err.Error()
		}
		d.Took = time.Since(start)
		p.record(d)
		return
	}
	cmd := p.Sluice(context.Background(), args...)
	out, _ := cmd.CombinedOutput()
	d := Decision{ID: id, Args: args, Exit: -1, Output: strings.TrimSpace(string(out)), Took: time.Since(start)}
	if cmd.ProcessState != nil {
		d.Exit = cmd.ProcessState.ExitCode()
	}
	p.record(d)
}

func (p *Person) record(d Decision) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.decisions = append(p.decisions, d)
}

// Decisions are the decisions carried out so far, the polls made and
// the polls that failed.
func (p *Person) Decisions() ([]Decision, int, Failures) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Decision(nil), p.decisions...), p.polls, append(Failures(nil), p.failures...)
}
