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
	seen := map[string]bool{}
	first := true
	var sent []time.Time
	held := 0
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		changed := src.Changed()
		now := n.Now()
		kept := sent[:0]
		for _, t := range sent {
			if now.Sub(t) < time.Minute {
				kept = append(kept, t)
			}
		}
		sent = kept
		present := map[string]bool{}
		for _, it := range src.Queue() {
			if it.State != queue.StatePending || it.Request == nil {
				continue
			}
			present[it.ID] = true
			if seen[it.ID] {
				continue
			}
			seen[it.ID] = true
			if first {
				continue
			}
			if len(sent) >= n.PerMinute {
				held++
				continue
			}
			sent = append(sent, now)
			n.post(ctx, "sluice: "+orSomeone(Plain(it.Request.Agent, 40))+" asks",
				Plain(it.Request.Summary(), 300), n.link("#req="+url.QueryEscape(it.ID)))
		}
		for id := range seen {
			if !present[id] {
				delete(seen, id)
			}
		}
		first = false
		if held > 0 && len(sent) < n.PerMinute {
			sent = append(sent, now)
			n.post(ctx, "sluice: more requests wait", fmt.Sprintf("%d more requests started waiting", held), n.link(""))
			held = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		}
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
