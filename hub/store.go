package hub

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nkeys"
)

// Store is a hub's directory: its TLS identity, the users it issued, and
// JetStream's data.
//
//	DIR/tls/cert.pem, DIR/tls/key.pem   the hub's certificate (made once)
//	DIR/users.json                      the boxes and consoles (public keys)
//	DIR/creds/NAME.creds                what add-box and add-console issued
//	DIR/jetstream/                      the streams
type Store struct {
	Dir string
}

// User is one box or console the hub admits.
type User struct {
	Name  string    `json:"name"`
	Role  string    `json:"role"`
	NKey  string    `json:"nkey"` // public user key (U...)
	Added time.Time `json:"added"`
}

// Open makes dir a hub store if it is not one yet (mode 0700) and checks
// that nobody else can read it.
func Open(dir string) (*Store, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("hub store: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("hub store: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("hub store %s is not a directory", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("hub store %s can be read by others (mode %04o): it holds the hub's private key; chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	for _, sub := range []string{"tls", "creds", "jetstream"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("hub store: %w", err)
		}
	}
	return &Store{Dir: dir}, nil
}

func (s *Store) usersPath() string { return filepath.Join(s.Dir, "users.json") }

// Users are the boxes and consoles the hub admits.
func (s *Store) Users() ([]User, error) {
	data, err := os.ReadFile(s.usersPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hub store: %w", err)
	}
	var us []User
	if err := json.Unmarshal(data, &us); err != nil {
		return nil, fmt.Errorf("hub store: %s is not a list of users (%v); restore it or remove it and add every box and console again", s.usersPath(), err)
	}
	for _, u := range us {
		if !ValidName(u.Name) || (u.Role != RoleBox && u.Role != RoleConsole) || !nkeys.IsValidPublicUserKey(u.NKey) {
			return nil, fmt.Errorf("hub store: %s holds an invalid user %+v", s.usersPath(), u)
		}
	}
	return us, nil
}

// Add issues a new user: an NKey pair whose public half the hub admits
// with role's permissions, and credentials (the seed, the hub's address
// and certificate fingerprint) for the box or console. It refuses a name
// in use. hubURL is written into the credentials when not empty.
func (s *Store) Add(name, role, hubURL string) (*Creds, string, error) {
	if !ValidName(name) {
		return nil, "", nameErr(role, name)
	}
	fp, err := s.Fingerprint()
	if err != nil {
		return nil, "", err
	}
	us, err := s.Users()
	if err != nil {
		return nil, "", err
	}
	if i := slices.IndexFunc(us, func(u User) bool { return u.Name == name }); i >= 0 {
		return nil, "", fmt.Errorf("%q is already a %s of this hub; pick another name, or remove it with 'sluice hub remove %s'", name, us[i].Role, name)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, "", err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, "", err
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, "", err
	}
	c := &Creds{Name: name, Role: role, Hub: hubURL, Fingerprint: fp, Seed: string(seed)}
	path := filepath.Join(s.Dir, "creds", name+".creds")
	if err := c.Write(path); err != nil {
		return nil, "", err
	}
	us = append(us, User{Name: name, Role: role, NKey: pub, Added: time.Now().UTC().Truncate(time.Second)})
	if err := writeJSON(s.usersPath(), us); err != nil {
		return nil, "", err
	}
	return c, path, nil
}

// Remove stops admitting name (a running hub drops it within a second).
func (s *Store) Remove(name string) error {
	us, err := s.Users()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(us, func(u User) bool { return u.Name == name })
	if i < 0 {
		return fmt.Errorf("%q is not a box or console of this hub ('sluice hub users' lists them)", name)
	}
	us = slices.Delete(us, i, i+1)
	if err := writeJSON(s.usersPath(), us); err != nil {
		return err
	}
	_ = os.Remove(filepath.Join(s.Dir, "creds", name+".creds"))
	return nil
}

// writeJSON writes v to path atomically, readable by its owner only.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("hub store: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("hub store: %w", err)
	}
	return nil
}

// TLS returns the hub's certificate, making it on first use: an ECDSA
// P-256 key and a self-signed certificate for ten years. Boxes and
// consoles pin its fingerprint rather than trust a name.
func (s *Store) TLS() (tls.Certificate, error) {
	certPath, keyPath := filepath.Join(s.Dir, "tls", "cert.pem"), filepath.Join(s.Dir, "tls", "key.pem")
	if _, err := os.Stat(certPath); errors.Is(err, fs.ErrNotExist) {
		if err := makeCert(certPath, keyPath); err != nil {
			return tls.Certificate{}, err
		}
	}
	c, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("hub store: the hub's certificate: %w", err)
	}
	return c, nil
}

// Fingerprint is the SHA-256 of the hub certificate's DER bytes, in hex.
func (s *Store) Fingerprint() (string, error) {
	c, err := s.TLS()
	if err != nil {
		return "", err
	}
	return fingerprint(c.Certificate[0]), nil
}

func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

func makeCert(certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "sluice hub " + host},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if host != "" {
		tmpl.DNSNames = append(tmpl.DNSNames, host)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return fmt.Errorf("hub store: %w", err)
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("hub store: %w", err)
	}
	return nil
}
