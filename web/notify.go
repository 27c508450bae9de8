package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// Notifier posts to an ntfy-compatible URL (notify_url) when a request
// starts waiting: the body says what asks, the Title and Click headers
// name it and link to it under Link (web_url). At most PerMinute posts go
// out a minute; what is held back is summed up in one post when the
// minute allows.
type Notifier struct {
	URL       string
	Link      string // the page's address; "" for no link
	PerMinute int
	Client    *http.Client
	Logf      func(format string, args ...any)
	Now       func() time.Time
}

// Run posts for src's new requests until ctx ends. Requests waiting when
// it starts are not announced.
func (n *Notifier) Run(ctx context.Context, src Source) {
	if n.PerMinute <= 0 {
		n.PerMinute = 6
	}
	if n.Client == nil {
		n.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if n.Logf == nil {
		n.Logf = func(string, ...any) {}
	}
	if n.Now == nil {
		n.Now = time.Now
	}
	st := &notifyState{seen: map[string]bool{}, first: true}
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		changed := src.Changed()
		n.step(ctx, src, st)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

// notifyState is what a Notifier remembers between looks at the queue.
type notifyState struct {
	seen  map[string]bool // pending ids already announced (or there at the start)
	first bool
	sent  []time.Time // posts in the last minute
	held  int         // requests not announced for the limit
}

// step announces the requests that started waiting since the last step,
// within the limit.
func (n *Notifier) step(ctx context.Context, src Source, st *notifyState) {
	now := n.Now()
	kept := st.sent[:0]
	for _, t := range st.sent {
		if now.Sub(t) < time.Minute {
			kept = append(kept, t)
		}
	}
	st.sent = kept
	present := map[string]bool{}
	for _, it := range src.Queue() {
		if it.State != queue.StatePending || it.Request == nil {
			continue
		}
		present[it.ID] = true
		if st.seen[it.ID] {
			continue
		}
		st.seen[it.ID] = true
		if st.first {
			continue
		}
		if len(st.sent) >= n.PerMinute {
			st.held++
			continue
		}
		st.sent = append(st.sent, now)
		n.post(ctx, "sluice: "+orSomeone(Plain(it.Request.Agent, 40))+" asks",
			Plain(it.Request.Summary(), 300), n.link("#req="+url.QueryEscape(it.ID)))
	}
	for id := range st.seen {
		if !present[id] {
			delete(st.seen, id)
		}
	}
	st.first = false
	if st.held > 0 && len(st.sent) < n.PerMinute {
		st.sent = append(st.sent, now)
		n.post(ctx, "sluice: more requests wait", fmt.Sprintf("%d more requests started waiting", st.held), n.link(""))
		st.held = 0
	}
}

func orSomeone(s string) string {
	if s == "" {
		return "an agent"
	}
	return s
}

func (n *Notifier) link(frag string) string {
	if n.Link == "" {
		return ""
	}
	return strings.TrimRight(n.Link, "/") + "/" + frag
}

// post sends one notification, ntfy's way: the body is the message, the
// headers its title and link.
func (n *Notifier) post(ctx context.Context, title, body, link string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.URL, strings.NewReader(body))
	if err != nil {
		n.Logf("notify: %v", err)
		return
	}
	req.Header.Set("Title", title)
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	if link != "" {
		req.Header.Set("Click", link)
	}
	req.Header.Set("Tags", "sluice")
	resp, err := n.Client.Do(req)
	if err != nil {
		n.Logf("notify: %v", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		n.Logf("notify: %s answered %s", n.URL, resp.Status)
	}
}
