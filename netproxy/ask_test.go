package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// asker is a scripted person: each question takes the next answer.
type asker struct {
	mu      sync.Mutex
	asked   []string
	answers []Answer
	hold    chan struct{} // if not nil, each question waits on it first
	calls   chan string   // if not nil, told of each question
}

func (a *asker) ask(ctx context.Context, host string, port int) (Answer, error) {
	t := target{host: host, port: port}
	if a.calls != nil {
		a.calls <- t.String()
	}
	if a.hold != nil {
		select {
		case <-a.hold:
		case <-ctx.Done():
			return AnswerDeny, ctx.Err()
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, t.String())
	if len(a.answers) == 0 {
		return AnswerDeny, errors.New("no more answers")
	}
	ans := a.answers[0]
	a.answers = a.answers[1:]
	return ans, nil
}

func (a *asker) questions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// unknownServer is an HTTPS server for unknown.test that no rule names
// by name (its address is allowed, as a test's local server must be).
func unknownServer(t *testing.T) Config {
	t.Helper()
	srv := tlsServer(t, "ok", "unknown.test")
	local := addrOf(t, srv)
	return Config{
		Allow:   rules(t, "test server", local.String()),
		Resolve: table(map[string]netip.AddrPort{"unknown.test": local}),
	}
}

// try opens a tunnel to unknown.test and fetches a page through it; it
// returns "" on success or the refusal.
func try(t *testing.T, addr string) string {
	t.Helper()
	got, err := tryErr(addr)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// tryErr is try for a goroutine.
func tryErr(addr string) (string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT unknown.test:443 HTTP/1.1\r\nHost: unknown.test:443\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return resp.Status + "|" + strings.TrimSpace(string(body)), nil
	}
	tc := tls.Client(c, &tls.Config{ServerName: "unknown.test", RootCAs: ca.pool})
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: unknown.test\r\nConnection: close\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		return "", err
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "ok /" {
		return "", fmt.Errorf("through the tunnel: %q, %v", body, err)
	}
	return "", nil
}

func TestAsk(t *testing.T) {
	t.Parallel()
	refused := func(why string) string {
		return "403 sluice: unknown.test:443 refused: " + why + "|sluice: unknown.test:443 refused: " + why
	}
	for _, tc := range []struct {
		name    string
		answers []Answer
		want    []string // each connection's outcome
		asked   int
		by      []string
	}{
		{"once asks again", []Answer{AnswerOnce, AnswerOnce, AnswerDeny}, []string{"", "", refused("the person refused it")}, 3,
			[]string{"asked-once", "refused: the person refused it"}},
		{"for the run asks once", []Answer{AnswerRun}, []string{"", "", ""}, 1, []string{"asked-run"}},
		{"a refusal holds for the run", []Answer{AnswerDeny, AnswerRun}, []string{refused("the person refused it"), refused("the person refused it for this run")}, 1,
			[]string{"refused: the person refused it", "refused: the person refused it for this run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := unknownServer(t)
			a := &asker{answers: tc.answers}
			cfg.Ask = a.ask
			p, addr := start(t, cfg)
			for i, want := range tc.want {
				if got := try(t, addr); got != want {
					t.Fatalf("connection %d: got %q, want %q", i, got, want)
				}
			}
			if got := a.questions(); len(got) != tc.asked || got[0] != "unknown.test:443" {
				t.Fatalf("questions %q", got)
			}
			_ = p.Close()
			var by []string
			for _, c := range p.Contacts() {
				by = append(by, c.AllowedBy)
			}
			if strings.Join(by, ",") != strings.Join(tc.by, ",") {
				t.Fatalf("contacts %+v", p.Contacts())
			}
		})
	}
}

func TestAskTimeoutRefusesAndAsksAgain(t *testing.T) {
	t.Parallel()
	cfg := unknownServer(t)
	a := &asker{hold: make(chan struct{}), answers: []Answer{AnswerOnce}}
	cfg.Ask = a.ask
	cfg.AskTimeout = 20 * time.Millisecond
	_, addr := start(t, cfg)
	want := "403 sluice: unknown.test:443 refused: nobody answered within 20ms"
	if got := try(t, addr); !strings.HasPrefix(got, want+"|") {
		t.Fatalf("got %q, want %q", got, want)
	}
	// Silence is not a refusal for the run: the next connection asks.
	close(a.hold)
	if got := try(t, addr); got != "" {
		t.Fatalf("second connection: %q", got)
	}
}

// An Ask that ignores its context still cannot hold a connection past the
// timeout.
func TestAskIgnoringContextIsCut(t *testing.T) {
	t.Parallel()
	cfg := unknownServer(t)
	release := make(chan struct{})
	defer close(release)
	cfg.Ask = func(context.Context, string, int) (Answer, error) {
		<-release
		return AnswerRun, nil
	}
	cfg.AskTimeout = time.Millisecond
	_, addr := start(t, cfg)
	if got := try(t, addr); !strings.Contains(got, "nobody answered within 1ms") {
		t.Fatalf("got %q", got)
	}
}

func TestNoAskRefuses(t *testing.T) {
	t.Parallel()
	_, addr := start(t, unknownServer(t))
	if got := try(t, addr); !strings.Contains(got, "refused: not in this run's hosts") {
		t.Fatalf("got %q", got)
	}
}

// Connections to one host that arrive while it is being asked about wait
// for that one question.
func TestOneQuestionForConnectionsMeanwhile(t *testing.T) {
	t.Parallel()
	cfg := unknownServer(t)
	a := &asker{hold: make(chan struct{}), calls: make(chan string, 8), answers: []Answer{AnswerOnce, AnswerOnce}}
	cfg.Ask = a.ask
	cfg.AskTimeout = time.Hour
	p, addr := start(t, cfg)
	results := make(chan error, 3)
	run := func() {
		got, err := tryErr(addr)
		if err == nil && got != "" {
			err = errors.New(got)
		}
		results <- err
	}
	go run()
	<-a.calls
	for range 2 {
		go run()
	}
	for waiting := 0; waiting < 2; {
		p.mu.Lock()
		if q := p.asking["unknown.test:443"]; q != nil {
			waiting = q.waiters
		}
		p.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
	close(a.hold)
	for range 3 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	if got := a.questions(); len(got) != 1 {
		t.Fatalf("questions %q", got)
	}
}

// Closing the proxy ends a connection held by a question.
func TestCloseEndsAQuestion(t *testing.T) {
	t.Parallel()
	cfg := unknownServer(t)
	a := &asker{hold: make(chan struct{}), calls: make(chan string, 1)}
	cfg.Ask = a.ask
	cfg.AskTimeout = time.Hour
	p, addr := start(t, cfg)
	done := make(chan error)
	go func() {
		_, err := tryErr(addr)
		done <- err
	}()
	<-a.calls
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("the held connection went through")
	}
}
