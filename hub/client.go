package hub

import (
	"context"
	"fmt"
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
		nats.ReconnectWait(time.Second),
		nats.Timeout(5 * time.Second),
	}, opts...)
	nc, err := nats.Connect(url, all...)
	if err != nil {
		return nil, fmt.Errorf("hub %s: %w", url, err)
	}
	cl := &Client{Creds: c, NC: nc}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	for _, b := range []struct {
		name string
		kv   *jetstream.KeyValue
	}{{BucketPending, &cl.Pending}, {BucketDecisions, &cl.Decisions}, {BucketResults, &cl.Results}} {
		kv, err := js.KeyValue(ctx, b.name)
		if err != nil {
			nc.Close()
			return nil, fmt.Errorf("hub %s: bucket %s: %w (a hub made by 'sluice hub serve' has it; for another NATS server run 'sluice hub init' once)", url, b.name, err)
		}
		*b.kv = kv
	}
	return cl, nil
}

// Close disconnects.
func (c *Client) Close() { c.NC.Close() }
