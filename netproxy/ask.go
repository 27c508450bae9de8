package netproxy

import (
	"context"
	"errors"
	"net"
)

// netResolver resolves names outside tests.
var netResolver = net.DefaultResolver

// question is one open question to the person about a host and port; the
// connections that arrive meanwhile wait on it.
type question struct {
	done   chan struct{}
	answer Answer
	why    string // set when the answer is a refusal
	// waiters counts the connections waiting on another's question.
	waiters int
}

// ask admits t by an answer the person gave for the run, or asks: the
// first connection to a host and port asks, the others wait for its
// answer. Nobody answering within AskTimeout refuses.
func (p *Proxy) ask(ctx context.Context, t target) verdict {
	if p.cfg.Ask == nil {
		return refuse("not in this run's hosts")
	}
	k := t.key()
	p.mu.Lock()
	if a, ok := p.remember[k]; ok {
		p.mu.Unlock()
		if a == AnswerRun {
			return verdict{by: AnswerRun.String()}
		}
		return refuse("the person refused it for this run")
	}
	q, waiting := p.asking[k]
	if waiting {
		q.waiters++
	} else {
		q = &question{done: make(chan struct{})}
		p.asking[k] = q
	}
	p.mu.Unlock()

	if !waiting {
		p.askPerson(ctx, t, q)
	}
	select {
	case <-q.done:
	case <-ctx.Done():
		return refuse("the proxy stopped")
	}
	if q.why != "" {
		return refuse("%s", q.why)
	}
	return verdict{by: q.answer.String()}
}

// askPerson puts q to Config.Ask and files the answer; it returns by the
// timeout even if Ask does not.
func (p *Proxy) askPerson(ctx context.Context, t target, q *question) {
	actx, cancel := context.WithTimeout(ctx, p.cfg.AskTimeout)
	defer cancel()
	type reply struct {
		a   Answer
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		a, err := p.cfg.Ask(actx, t.host, t.port)
		ch <- reply{a, err}
	}()
	var r reply
	select {
	case r = <-ch:
	case <-actx.Done():
		r.err = actx.Err()
	}

	p.mu.Lock()
	delete(p.asking, t.key())
	switch {
	case errors.Is(r.err, context.DeadlineExceeded):
		q.why = "nobody answered within " + p.cfg.AskTimeout.String()
	case errors.Is(r.err, context.Canceled) && ctx.Err() != nil:
		q.why = "the proxy stopped"
	case r.err != nil:
		q.why = "asking failed: " + clean(r.err.Error())
	case r.a == AnswerRun:
		q.answer = AnswerRun
		p.remember[t.key()] = AnswerRun
	case r.a == AnswerOnce:
		q.answer = AnswerOnce
	default:
		q.why = "the person refused it"
		p.remember[t.key()] = AnswerDeny
	}
	p.mu.Unlock()
	close(q.done)
}
