package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNotifyNewRequestsWithinTheLimit(t *testing.T) {
	t.Parallel()
	type post struct{ title, click, body string }
	var mu sync.Mutex
	var posts []post
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, post{r.Header.Get("Title"), r.Header.Get("Click"), string(b)})
		mu.Unlock()
	}))
	defer hs.Close()
	clk := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
	n := &Notifier{URL: hs.URL, Link: "https://box.example.ts.net/", PerMinute: 2, Client: hs.Client(), Now: clk.now,
		Logf: func(f string, a ...any) { t.Errorf(f, a...) }}
	src := newFake()
	st := &notifyState{seen: map[string]bool{}, first: true}
	ctx := context.Background()

	src.put("old", "echo waiting before", digestA)
	n.step(ctx, src, st) // what waits at the start is not announced
	for i := range 5 {
		src.put(fmt.Sprintf("r%d", i), "rm -rf \x1b[2Jbuild", digestA)
	}
	n.step(ctx, src, st)
	n.step(ctx, src, st) // nothing new: nothing posted
	mu.Lock()
	got := append([]post(nil), posts...)
	mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("posts in the first minute: %d, want 2 (%v)", len(got), got)
	}
	if got[0].title != "sluice: claude asks" || got[0].click != "https://box.example.ts.net/#req=r0" || got[0].body != `rm -rf \x1b[2Jbuild` {
		t.Errorf("first post: %+v", got[0])
	}
	clk.add(time.Minute)
	n.step(ctx, src, st)
	mu.Lock()
	defer mu.Unlock()
	if len(posts) != 3 || !strings.Contains(posts[2].body, "3 more requests") {
		t.Fatalf("after a minute: %+v, want one post for the 3 held back", posts)
	}
}
