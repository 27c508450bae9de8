package hub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// Client is a box's or console's connection to its hub.
type Client struct {
	Creds     *Creds
	NC        *nats.Conn
	Pending   jetstream.KeyValue
	Decisions jetstream.KeyValue
	Results   jetstream.KeyValue

	mu       sync.Mutex
	relinked chan struct{} // closed at the next reconnection
}

// Connect reaches the hub at url (the credentials' when url is empty) over
// TLS pinned to the credentials' fingerprint, as the credentials' user. It
// keeps reconnecting for as long as the client lives: a hub that is down
// costs the fleet only its shared view.
func Connect(ctx context.Context, url string, c *Creds, opts ...nats.Option) (*Client, error) {
	if url == "" {
		url = c.Hub
	}
	if url == "" {
		return nil, fmt.Errorf("no hub address: give --hub nats://HOST:PORT (the credentials for %s do not name one)", c.Name)
	}
	kp, err := nkeys.FromSeed([]byte(c.Seed))
	if err != nil {
		return nil, err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	all := append([]nats.Option{
		nats.Name("sluice " + c.Role + " " + c.Name),
		nats.Nkey(pub, kp.Sign),
		nats.Secure(c.tlsConfig()),
		nats.CustomInboxPrefix(inboxPrefix(c.Name)),
		nats.MaxReconnects(-1),
		// A hub that is back is found within half a second: a console
		// shows what waits within 2 s of the hub's restart, a box
		// publishes what waited meanwhile and gets its decisions. (The
		// defaults, 2 s and up to 1 s more over TLS, took up to 3 s.)
		nats.ReconnectWait(reconnectWait),
		nats.ReconnectJitter(reconnectJitter, reconnectJitter),
		nats.Timeout(5 * time.Second),
	}, opts...)
	cl := &Client{Creds: c, relinked: make(chan struct{})}
	// After the caller's options: their reconnect handler is kept.
	all = append(all, func(o *nats.Options) error {
		theirs := o.ReconnectedCB
		o.ReconnectedCB = func(nc *nats.Conn) {
			cl.relink()
			if theirs != nil {
				theirs(nc)
			}
		}
		return nil
	})
	nc, err := nats.Connect(url, all...)
	if err != nil {
		return nil, fmt.Errorf("hub %s: %w", url, err)
	}
	cl.NC = nc
	if err := cl.openBuckets(ctx, c.Role == RoleBox); err != nil {
		nc.Close()
		return nil, fmt.Errorf("hub %s: %w", url, err)
	}
	return cl, nil
}

// openBuckets opens the three buckets on c.NC. A box's reach only its own
// keys (ownKV): it may not read a bucket's stream info, which lists every
// box's keys.
func (c *Client) openBuckets(ctx context.Context, box bool) error {
	js, err := jetstream.New(c.NC)
	if err != nil {
		return err
	}
	for _, b := range []struct {
		name string
		kv   *jetstream.KeyValue
	}{{BucketPending, &c.Pending}, {BucketDecisions, &c.Decisions}, {BucketResults, &c.Results}} {
		if box {
			own, err := newOwnKV(c.NC, b.name)
			if err != nil {
				return err
			}
			// A get of one of its own keys: the hub answers (a box that
			// is not admitted yet is not left with a connection the
			// client gave up on), and has the bucket.
			if _, err := own.last(ctx, Key(c.Creds.Name, "0")); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
				if errors.Is(err, nats.ErrNoResponders) {
					err = jetstream.ErrBucketNotFound
				}
				return fmt.Errorf("bucket %s: %w (a hub made by 'sluice hub serve' has it; for another NATS server run 'sluice hub init' once)", b.name, err)
			}
			*b.kv = own
			continue
		}
		kv, err := js.KeyValue(ctx, b.name)
		if err != nil {
			return fmt.Errorf("bucket %s: %w (a hub made by 'sluice hub serve' has it; for another NATS server run 'sluice hub init' once)", b.name, err)
		}
		*b.kv = kv
	}
	return nil
}

// How often a client that lost its hub tries it again: every
// reconnectWait and up to reconnectJitter more.
const (
	reconnectWait   = 250 * time.Millisecond
	reconnectJitter = 250 * time.Millisecond
)

// Relinked is closed when the client next reconnects to the hub. What the
// hub held for the client (a watch's consumer) may have gone with the hub
// it lost: a watch made before then is made again (kvWatch).
func (c *Client) Relinked() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.relinked
}

// relink closes the channel Relinked returned, for a new one.
func (c *Client) relink() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.relinked)
	c.relinked = make(chan struct{})
}

// Close disconnects.
func (c *Client) Close() { c.NC.Close() }
