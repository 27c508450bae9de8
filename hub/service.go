package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluice-dev/sluice/hub/wire"
	"github.com/sluice-dev/sluice/queue"
)

// Service is the hub's own part of the fleet, run as the hub's
// administrator: the embedded hub runs it in its process, and beside a
// nats-server it runs as 'sluice hub service'.
//
// It records decisions: a console asks on its own subject
// (DecideSubject), and the service makes the first-wins write to the
// decisions bucket with "by" naming the console the subject names (the
// credentials' name, which the console cannot choose), never what the
// console wrote. A console of an earlier version, which writes the
// retired bucket itself, is answered that it must be upgraded.
//
// It bounds the pending bucket: a request that waited longer than
// Limits.MaxAge, or that is over its box's Limits.PerBox, is taken off
// (it still waits on its box), and the consoles are told
// (DroppedSubject).
type Service struct {
	NC     *nats.Conn // as the hub's administrator
	Limits Limits
	Logf   func(string, ...any)
	// Ready, if set, is called once the service answers.
	Ready func()

	cl    *Client
	check chan struct{} // prune now
	held  heldSet
}

// Limits bound the pending bucket.
type Limits struct {
	// MaxAge is how long a request stays on the hub since its box last
	// published it (default 24 h).
	MaxAge time.Duration
	// PerBox is how many requests of one box the hub holds at once
	// (default 256): those beyond, the latest, are dropped.
	PerBox int
}

// Defaults of Limits.
const (
	DefaultMaxAge = 24 * time.Hour
	DefaultPerBox = 256
)

func (l Limits) withDefaults() Limits {
	if l.MaxAge <= 0 {
		l.MaxAge = DefaultMaxAge
	}
	if l.PerBox <= 0 {
		l.PerBox = DefaultPerBox
	}
	return l
}

// maxDecideRequest bounds a request to the decision service.
const maxDecideRequest = 64 << 10

// serviceQueue is the queue group of the decision services: one of them
// answers each request (a hub with two runs fine).
const serviceQueue = "sluice-hub"

func (s *Service) logf(format string, a ...any) {
	if s.Logf != nil {
		s.Logf(format, a...)
	}
}

// Run serves until ctx ends; s.NC reconnecting (a hub restarted) brings
// the service back with it.
func (s *Service) Run(ctx context.Context) error {
	s.Limits = s.Limits.withDefaults()
	s.cl = &Client{NC: s.NC, Creds: &Creds{Name: "hub", Role: "hub"}, relinked: make(chan struct{})}
	theirs := s.NC.Opts.ReconnectedCB
	s.NC.SetReconnectHandler(func(nc *nats.Conn) {
		s.cl.relink()
		if theirs != nil {
			theirs(nc)
		}
	})
	// The buckets may not be there yet (a server 'sluice hub init' has
	// yet to set up), nor the server: tried again until they are.
	for {
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := s.cl.openBuckets(octx, false)
		cancel()
		if err == nil {
			break
		}
		s.logf("the buckets cannot be opened (retrying): %v", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	sem := make(chan struct{}, 16) // decisions recorded at once
	sub, err := s.NC.QueueSubscribe(DecideSubject("*"), serviceQueue, func(m *nats.Msg) {
		console := strings.TrimPrefix(m.Subject, DecideSubject(""))
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			rep := s.decide(cctx, console, m.Data)
			data, _ := json.Marshal(rep)
			if m.Reply != "" {
				_ = m.Respond(data)
			}
		}()
	})
	if err != nil {
		return fmt.Errorf("hub service: %w", err)
	}
	defer sub.Unsubscribe()
	old, err := s.NC.QueueSubscribe("$KV."+bucketRetired+".>", serviceQueue, s.retired)
	if err != nil {
		return fmt.Errorf("hub service: %w", err)
	}
	defer old.Unsubscribe()
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_ = s.NC.FlushWithContext(fctx) // the subscriptions are on the server
	cancel()
	if s.Ready != nil {
		s.Ready()
	}
	s.bound(ctx)
	return nil
}

// decide records one console's decision, as the console the subject
// names.
func (s *Service) decide(ctx context.Context, console string, data []byte) wire.DecideReply {
	refuse := func(code, format string, a ...any) wire.DecideReply {
		return wire.DecideReply{Code: code, Error: fmt.Sprintf(format, a...)}
	}
	if !ValidName(console) {
		return refuse(wire.CodeRefused, "not a console's subject")
	}
	if len(data) > maxDecideRequest {
		return refuse(wire.CodeRefused, "a decision over %d bytes", maxDecideRequest)
	}
	var req struct {
		wire.DecideRequest
		By json.RawMessage `json:"by"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&req); err != nil {
		return refuse(wire.CodeRefused, "not a decision: %s", safe(err.Error()))
	}
	r := req.DecideRequest
	switch {
	case len(req.By) > 0:
		return refuse(wire.CodeRefused, "a decision names no \"by\": the hub records it by your credentials (%s); name the person with \"as\"", console)
	case r.Decision != Approve && r.Decision != Deny:
		return refuse(wire.CodeRefused, "decision %q: approve or deny", safe(r.Decision))
	case !ValidName(r.Box) || !queue.ValidID(r.ID):
		return refuse(wire.CodeRefused, "not a request on the hub: %s/%s", safe(r.Box), safe(r.ID))
	case !wire.ValidAs(r.As):
		return refuse(wire.CodeRefused, "as %q: at most %d letters, digits, spaces and ._-+()/:, (no '@')", safe(r.As), wire.MaxAs)
	case len(r.Reason) > 16<<10:
		return refuse(wire.CodeRefused, "a reason over 16 KiB")
	case r.Digest != "" && !validDigestPrefix(r.Digest):
		return refuse(wire.CodeRefused, "digest %q: give 8 to 64 lower-case hex digits", safe(r.Digest))
	case r.Decision == Approve && r.Digest == "":
		return refuse(wire.CodeRefused, "an approval needs the digest of the request as shown")
	case r.DiffDigest != "" && !validDigest(r.DiffDigest):
		return refuse(wire.CodeRefused, "diff digest %q: give 64 lower-case hex digits", safe(r.DiffDigest))
	case r.Scope != "" && r.Scope != string(queue.ScopeOnce) && r.Scope != wire.ScopeRun:
		return refuse(wire.CodeRefused, "scope %q: once or run", safe(r.Scope))
	case r.Scope == wire.ScopeRun && r.Decision != Approve:
		return refuse(wire.CodeRefused, "a scope goes with an approval of a connect request, not a deny")
	}
	key := Key(r.Box, r.ID)
	e, err := s.cl.Pending.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		if prev, perr := s.cl.decision(ctx, key); perr == nil {
			return wire.DecideReply{Code: wire.CodeDecided, Decision: prev, Error: (&ErrDecided{Decision: *prev}).Error()}
		}
		return refuse(wire.CodeNotPending, "%s/%s: %s", r.Box, r.ID, ErrNotPending)
	}
	if err != nil {
		return wire.DecideReply{Error: "the hub's buckets: " + err.Error()}
	}
	var p Pending
	if err := json.Unmarshal(e.Value(), &p); err != nil || Key(p.Box, p.ID) != key {
		return refuse(wire.CodeNotPending, "%s/%s: the hub holds something that is not this request", r.Box, r.ID)
	}
	held := wire.DiffDigest(p.Diff, p.DiffErr)
	if (r.Digest != "" && !strings.HasPrefix(p.Digest, r.Digest)) || (r.DiffDigest != "" && r.DiffDigest != held) {
		return refuse(wire.CodeChanged, "%s/%s: %s", r.Box, r.ID, ErrChanged)
	}
	if r.Scope == wire.ScopeRun {
		var shown struct {
			Kind queue.Kind `json:"kind"`
		}
		if json.Unmarshal(p.Request, &shown) != nil || shown.Kind != queue.KindConnect {
			return refuse(wire.CodeRefused, "%s/%s: only a connect request is allowed for the rest of its run", r.Box, r.ID)
		}
	}
	by := console
	if r.As != "" {
		by = r.As + "@" + console
	}
	d := Decision{Decision: r.Decision, By: by, Reason: r.Reason, Digest: p.Digest, DiffDigest: held, At: time.Now().UTC(),
		Scope: r.Scope}
	if d.Scope != wire.ScopeRun {
		d.Scope = "" // once is what an absent scope means
	}
	value, _ := json.Marshal(d)
	if _, err := s.cl.Decisions.Create(ctx, key, value); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			if prev, perr := s.cl.decision(ctx, key); perr == nil {
				return wire.DecideReply{Code: wire.CodeDecided, Decision: prev, Error: (&ErrDecided{Decision: *prev}).Error()}
			}
		}
		return wire.DecideReply{Error: "the hub's buckets: " + err.Error()}
	}
	if d.Scope != "" {
		s.logf("%s/%s: %s (for the run) by %s", r.Box, r.ID, r.Decision, by)
	} else {
		s.logf("%s/%s: %s by %s", r.Box, r.ID, r.Decision, by)
	}
	return wire.DecideReply{Decision: &d}
}

// upgradeText is what a console of an earlier version is told when it
// writes a decision itself.
const upgradeText = "sluice hub: this hub records decisions through its decision service, not from the console's own write: upgrade sluice on this console (sluice and sluice-hub) to decide"

// retired answers a console of an earlier version that wrote a decision
// to the retired bucket, as JetStream answers a refused write: its
// client shows the description.
func (s *Service) retired(m *nats.Msg) {
	s.logf("a console of an earlier version tried to decide (%s): told to upgrade", safe(m.Subject))
	if m.Reply == "" {
		return
	}
	data, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 400, "err_code": 10000, "description": upgradeText}})
	_ = m.Respond(data)
}
