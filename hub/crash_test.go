package hub

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// The fleet under SIGKILL: a nats-server process killed and started again
// at random moments, and box bridges stopped and started again, while
// agents ask and consoles decide. No request is lost (each gets a result on
// its box), none runs twice, and each box's audit chain verifies.
func TestFleetSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts for ~10 s")
	}
	st, creds := testStore(t, []string{"b1", "b2"}, []string{"c1", "c2"})
	srv := natsServer(t, st)
	url := srv.url

	boxes := map[string]*testBox{}
	var stops sync.Map
	for _, name := range []string{"b1", "b2"} {
		tb := openTestBox(t, name)
		boxes[name] = tb
		stops.Store(name, startBridgeRetrying(t, tb, url, creds[name]))
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var kills atomic.Int64
	// Chaos: the server killed every 0.5-1.5 s and back 0.2-0.5 s later;
	// a bridge stopped and started again now and then.
	wg.Go(func() {
		for ctx.Err() == nil {
			sleepCtx(ctx, time.Duration(500+rand.IntN(1000))*time.Millisecond)
			srv.kill()
			kills.Add(1)
			sleepCtx(ctx, time.Duration(200+rand.IntN(300))*time.Millisecond)
			srv.start()
			name := []string{"b1", "b2"}[rand.IntN(2)]
			if stop, ok := stops.Load(name); ok {
				stop.(func())()
			}
			stops.Store(name, startBridgeRetrying(t, boxes[name], url, creds[name]))
		}
	})
	// Consoles: decide whatever waits, each trying; most approve.
	for _, c := range []string{"c1", "c2"} {
		wg.Go(func() {
			var cl *Client
			for ctx.Err() == nil {
				if cl == nil {
					var err error
					if cl, err = Connect(ctx, url, creds[c], quiet()); err != nil {
						sleepCtx(ctx, 100*time.Millisecond)
						continue
					}
					defer cl.Close()
				}
				lctx, lcancel := context.WithTimeout(ctx, time.Second)
				ps, _ := cl.List(lctx, "")
				for _, p := range ps {
					d := Approve
					if rand.IntN(4) == 0 {
						d = Deny
					}
					cl.Decide(lctx, Choice{Box: p.Box, ID: p.ID, Decision: d, As: c, Digest: p.Digest})
				}
				lcancel()
				sleepCtx(ctx, 50*time.Millisecond)
			}
		})
	}
	// Agents: 40 asks per box over ~6 s.
	asked := map[string][]string{}
	for i := range 40 {
		for _, name := range []string{"b1", "b2"} {
			req := boxes[name].ask(t, fmt.Sprintf("make deploy-%d", i))
			asked[name] = append(asked[name], req.ID)
		}
		time.Sleep(150 * time.Millisecond)
	}
	// Then calm: the server up, and every request answered.
	deadline := time.Now().Add(60 * time.Second)
	for _, name := range []string{"b1", "b2"} {
		for _, id := range asked[name] {
			for {
				if res, err := boxes[name].spool.ReadResult(id); err == nil && res != nil {
					if res.DecidedBy != queue.ByHuman {
						t.Errorf("%s/%s answered %s by %s, not by a console's decision", name, id, res.Status, res.DecidedBy)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s/%s never answered", name, id)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	cancel()
	wg.Wait()
	if kills.Load() < 3 {
		t.Fatalf("the server was killed %d times: too few to test anything", kills.Load())
	}
	t.Logf("the server was killed %d times", kills.Load())
	srv.start() // if the chaos left it down: for the bridges' cleanup
	for _, name := range []string{"b1", "b2"} {
		runs := map[string]int{}
		for _, id := range boxes[name].apply.runs() {
			runs[id]++
			if runs[id] > 1 {
				t.Errorf("%s/%s ran %d times", name, id, runs[id])
			}
		}
		if _, err := audit.VerifyFile(boxes[name].log.Path()); err != nil {
			t.Errorf("%s: audit chain: %v", name, err)
		}
		t.Logf("%s: %d asked, %d ran", name, len(asked[name]), len(runs))
	}
}

// startBridgeRetrying starts tb's bridge once the server answers.
func startBridgeRetrying(t *testing.T, tb *testBox, url string, c *Creds) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl, err := Connect(ctx, url, c, quiet())
			if err != nil {
				sleepCtx(ctx, 100*time.Millisecond)
				continue
			}
			b := &Box{Name: c.Name, Spool: tb.spool, AuditPath: tb.log.Path(), Client: cl, Apply: tb.apply, Every: 50 * time.Millisecond}
			b.Run(ctx)
			cl.Close()
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// quiet drops the client's asynchronous error reports (a killed server's).
func quiet() nats.Option {
	return nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})
}
