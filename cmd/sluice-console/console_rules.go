package main

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/internal/app"
	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/netproxy/netrule"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/tui"
)

// matchCounter counts the exec requests in the audit log (their queued
// lines) that a proposed command rule would have matched.
func matchCounter(j *policy.Judge, auditFile string) func(pattern string) (int, error) {
	return func(pattern string) (int, error) {
		matchers := map[string]func(string, policy.Env) bool{} // by cwd's policy
		n := 0
		err := audit.EachQueuedExec(auditFile, func(ev *queue.Event) error {
			match, ok := matchers[ev.Cwd]
			if !ok {
				p, err := j.Policy(ev.Cwd)
				if err != nil {
					return err
				}
				if match, err = p.Matcher(pattern); err != nil {
					return err
				}
				matchers[ev.Cwd] = match
			}
			if match(ev.Command, policy.Env{Cwd: ev.Cwd}) {
				n++
			}
			return nil
		})
		return n, err
	}
}

// hostCounter counts, in one read of the audit log, the connect requests
// (their queued lines) that each proposed network_allow entry would have
// admitted.
func hostCounter(auditFile string) func(entries []string) ([]int, error) {
	return func(entries []string) ([]int, error) {
		rules := make([]netrule.Rule, len(entries))
		for i, e := range entries {
			r, err := netrule.ParseRule(e)
			if err != nil {
				return nil, err
			}
			rules[i] = r
		}
		n := make([]int, len(entries))
		err := audit.EachQueued(auditFile, queue.KindConnect, func(ev *queue.Event) error {
			for i, r := range rules {
				if r.MatchTarget(ev.Host) {
					n[i]++
				}
			}
			return nil
		})
		return n, err
	}
}

// consoleRules gives the console's A and T keys their effect: a rule in
// the person's policy file (everywhere, or for the request's project), or
// a trust for the request's agent session.
type consoleRules struct {
	judge   *policy.Judge
	file    string // the person's policy file
	trust   *policy.TrustStore
	rec     queue.Recorder
	actor   string
	trustOf time.Duration // how long T trusts
}

// sessionTrust is how long the A dialog's "this agent session" scope
// trusts a rule: longer than any session lasts.
const sessionTrust = 12 * time.Hour

// newRule is the rule A adds for scope everywhere or this project.
func (c *consoleRules) newRule(req *queue.Request, pattern string, scope tui.RuleScope) policy.NewRule {
	r := policy.NewRule{Action: "allow", Command: pattern, Reason: "added in the console",
		Comment: fmt.Sprintf("approved %q", req.Command), Match: []string{req.Command}}
	if scope == tui.ScopeProject {
		r.Project = policy.ProjectRoot(req.Cwd)
	}
	return r
}

func (c *consoleRules) text(req *queue.Request, pattern string, scope tui.RuleScope) string {
	if scope == tui.ScopeSession {
		return fmt.Sprintf("trust %q for %s session %s until %s (sluice trust ls; sluice trust revoke ID)",
			pattern, cli.OrDash(req.Agent), req.Session, time.Now().Add(sessionTrust).Format("15:04"))
	}
	t, err := c.newRule(req, pattern, scope).Text()
	if err != nil {
		return err.Error()
	}
	return t
}

func (c *consoleRules) add(req *queue.Request, pattern string, scope tui.RuleScope) (string, error) {
	if scope == tui.ScopeSession {
		return c.grant(req, pattern, sessionTrust)
	}
	if c.file == "" {
		return "", errors.New("no user policy file (set SLUICE_POLICY or --policy)")
	}
	if err := policy.AppendRule(c.file, c.newRule(req, pattern, scope)); err != nil {
		return "", err
	}
	c.judge.Reset()
	return app.HomeShort(c.file), nil
}

// hostComment is the comment above a network_allow statement A writes.
func hostComment(req *queue.Request) string {
	return fmt.Sprintf("allowed in the console: %q wanted %s", req.Command, req.Target())
}

// hostText is what adding entry to the person's network_allow makes of
// it, as the file will read.
func (c *consoleRules) hostText(req *queue.Request, entry string) (string, error) {
	if c.file == "" {
		return "", errors.New("no user policy file (set SLUICE_POLICY or --policy)")
	}
	return policy.NetworkAllowText(c.file, entry, hostComment(req))
}

// addHost keeps entry in the person's network_allow, where the policy
// every later networked run is judged by reads it.
func (c *consoleRules) addHost(req *queue.Request, entry string) (string, error) {
	if c.file == "" {
		return "", errors.New("no user policy file (set SLUICE_POLICY or --policy)")
	}
	if _, err := policy.AppendNetworkAllow(c.file, entry, hostComment(req)); err != nil {
		return "", err
	}
	c.judge.Reset()
	return app.HomeShort(c.file), nil
}

// grant trusts pattern for req's agent session for d.
func (c *consoleRules) grant(req *queue.Request, pattern string, d time.Duration) (string, error) {
	if req.Session == "" {
		return "", errors.New("the request names no agent session")
	}
	now := time.Now()
	e := policy.TrustEntry{ID: "T" + queue.NewID()[1:], Session: req.Session, Agent: req.Agent, Pattern: pattern,
		Until: now.Add(d), By: c.actor, Created: now}
	if err := c.trust.Grant(c.rec, e, req.Cwd); err != nil {
		return "", err
	}
	return fmt.Sprintf("trusted %q for session %s until %s", pattern, req.Session, e.Until.Format("15:04")), nil
}

func (c *consoleRules) trustRule(req *queue.Request, pattern string) (string, error) {
	return c.grant(req, pattern, c.trustOf)
}

// trusts describes the trusts in force for the header, soonest end first.
func (c *consoleRules) trusts() []string {
	now := time.Now()
	es := c.trust.Active(now)
	slices.SortFunc(es, func(a, b policy.TrustEntry) int { return a.Until.Compare(b.Until) })
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = fmt.Sprintf("%s · %s · %s left", e.Pattern, e.Session, e.Until.Sub(now).Round(time.Second))
	}
	return out
}
