package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// adminKey is the store's administrator: the user that makes the buckets.
// Its seed stays in the store (mode 600); no box or console gets it.
func (s *Store) adminKey() (nkeys.KeyPair, error) {
	p := filepath.Join(s.Dir, "admin.seed")
	seed, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, err
		}
		if seed, err = kp.Seed(); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, seed, 0o600); err != nil {
			return nil, fmt.Errorf("hub store: %w", err)
		}
		return kp, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hub store: %w", err)
	}
	return nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
}

// ServerConfig is a configuration for a nats-server process of its own
// (rather than the embedded hub) serving this store: the same TLS
// certificate, users and permissions, JetStream in DIR/jetstream. Run it
// with 'nats-server -c FILE', then 'sluice hub init' once.
func (s *Store) ServerConfig(listen string) ([]byte, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: %v", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: bad port", listen)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	if _, err := s.TLS(); err != nil {
		return nil, err
	}
	admin, err := s.adminKey()
	if err != nil {
		return nil, err
	}
	adminPub, _ := admin.PublicKey()
	us, err := s.Users()
	if err != nil {
		return nil, err
	}
	type perm struct {
		Allow []string `json:"allow"`
	}
	type user struct {
		NKey        string `json:"nkey"`
		Permissions *struct {
			Publish   perm `json:"publish"`
			Subscribe perm `json:"subscribe"`
		} `json:"permissions,omitempty"`
	}
	users := []user{{NKey: adminPub}}
	for _, u := range us {
		p := permissions(u.Role, u.Name)
		users = append(users, user{NKey: u.NKey, Permissions: &struct {
			Publish   perm `json:"publish"`
			Subscribe perm `json:"subscribe"`
		}{perm{p.Publish.Allow}, perm{p.Subscribe.Allow}}})
	}
	cfg := map[string]any{
		"server_name": "sluice-hub",
		"host":        host,
		"port":        port,
		"max_payload": 8 << 20,
		"jetstream":   map[string]any{"store_dir": filepath.Join(s.Dir, "jetstream")},
		"tls": map[string]any{
			"cert_file": filepath.Join(s.Dir, "tls", "cert.pem"),
			"key_file":  filepath.Join(s.Dir, "tls", "key.pem"),
			"timeout":   5,
		},
		"authorization": map[string]any{"users": users},
	}
	// nats-server reads JSON as its configuration syntax; quoted strings
	// are not variables, so "$KV..." subjects stay as they are.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // its parser knows no \u escapes: '>' as is
	enc.SetIndent("", "  ")
	if err := enc.Encode(cfg); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Init makes the buckets on the NATS server at url (one run with 'nats-
// server -c' from ServerConfig) as the store's administrator, over TLS
// pinned to the store's certificate; lim bounds the pending bucket (as
// the Service run beside that server should).
func (s *Store) Init(ctx context.Context, url string, lim Limits) error {
	nc, err := s.AdminConn(url, nats.Name("sluice hub init"))
	if err != nil {
		return err
	}
	defer nc.Close()
	return MakeBuckets(nc, lim)
}

// AdminConn connects to the NATS server at url as the store's
// administrator, over TLS pinned to the store's certificate: what 'sluice
// hub init' and 'sluice hub service' (beside a nats-server) use. It keeps
// reconnecting for as long as it lives.
func (s *Store) AdminConn(url string, opts ...nats.Option) (*nats.Conn, error) {
	admin, err := s.adminKey()
	if err != nil {
		return nil, err
	}
	fp, err := s.Fingerprint()
	if err != nil {
		return nil, err
	}
	pub, _ := admin.PublicKey()
	c := &Creds{Fingerprint: fp}
	all := append([]nats.Option{nats.Nkey(pub, admin.Sign), nats.Secure(c.tlsConfig()), nats.Timeout(10 * time.Second),
		nats.MaxReconnects(-1), nats.ReconnectWait(reconnectWait), nats.ReconnectJitter(reconnectJitter, reconnectJitter)}, opts...)
	nc, err := nats.Connect(url, all...)
	if err != nil {
		return nil, fmt.Errorf("hub %s: %w", url, err)
	}
	return nc, nil
}
