package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// interrupted is the cause of a writer's context when a signal ends it.
type interrupted struct{ sig os.Signal }

func (e interrupted) Error() string { return fmt.Sprintf("interrupted (%v)", e.sig) }

// signals is a writer's context, ended with an interrupted cause on
// SIGINT, SIGTERM or SIGHUP once its handler is armed, so that the writer
// withdraws its request itself, names who did it, and exits 128+n.
//
// The handler is armed only when it may be needed: at once where no
// engine serves the spool (the writer will wait), else once the wait
// has lasted signalDelay. A process's first signal.Notify costs ~0.4 ms
// of CPU (two more threads: the runtime's signal loop and the goroutine
// that waits on it), more than an auto-allowed 'true' leaves for sluice's
// own work; most writers are answered before signalDelay. A signal that
// comes before the handler is armed kills the writer as it would any
// program, and the engine withdraws the request it left, as it does for
// a writer killed with SIGKILL (queue.Spool.WriterGone). The handler is
// not undone: the process exits right after.
type signals struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	once   sync.Once
}

// signalDelay is how long a writer waits before it arms its handler when
// an engine serves the spool.
const signalDelay = 30 * time.Millisecond

func NewSignals() *signals {
	s := &signals{}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	return s
}

// arm installs the handler now (once): a signal from here on ends ctx.
func (s *signals) arm() {
	s.once.Do(func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		go func() { s.cancel(interrupted{<-sigs}) }()
	})
}

// ArmFor arms the handler at once when nothing serves the spool, else
// after signalDelay; it returns the context to wait with.
func (s *signals) ArmFor(serving bool) context.Context {
	if serving {
		time.AfterFunc(signalDelay, s.arm)
	} else {
		s.arm()
	}
	return s.ctx
}

// InterruptCode is the exit status for a writer a signal stopped:
// 128+n, as a shell reports it; false when err is not that.
func InterruptCode(err error) (int, bool) {
	var in interrupted
	if !errors.As(err, &in) {
		return 0, false
	}
	return 128 + Signum(in.sig), true
}
