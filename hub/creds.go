package hub

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nkeys"
)

// Creds is what a box or console needs to reach its hub: its name and
// role, its NKey seed (secret), the hub's address, and the fingerprint of
// the hub's certificate, pinned instead of trusting a certificate
// authority.
type Creds struct {
	Name        string `json:"name"`
	Role        string `json:"role"`
	Hub         string `json:"hub,omitempty"`
	Fingerprint string `json:"fingerprint"`
	Seed        string `json:"seed"`
}

// Write saves c to path, readable by its owner only.
func (c *Creds) Write(path string) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("hub credentials: %w", err)
	}
	return nil
}

// ReadCreds loads credentials and checks them: a seed that others can
// read is refused, as ssh refuses a readable private key.
func ReadCreds(path string) (*Creds, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("hub credentials: %w (make them on the hub with 'sluice hub add-box NAME' or 'add-console NAME' and copy the file here)", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("hub credentials %s can be read by others (mode %04o); chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hub credentials: %w", err)
	}
	var c Creds
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("hub credentials %s: not a credentials file (%v)", path, err)
	}
	if !ValidName(c.Name) || (c.Role != RoleBox && c.Role != RoleConsole) || len(c.Fingerprint) != 64 {
		return nil, fmt.Errorf("hub credentials %s: name, role or fingerprint missing or wrong", path)
	}
	kp, err := nkeys.FromSeed([]byte(c.Seed))
	if err != nil {
		return nil, fmt.Errorf("hub credentials %s: the seed: %v", path, err)
	}
	if pub, err := kp.PublicKey(); err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, fmt.Errorf("hub credentials %s: the seed is not a user's", path)
	}
	return &c, nil
}

// tlsConfig trusts exactly the certificate with c's fingerprint.
func (c *Creds) tlsConfig() *tls.Config {
	want := c.Fingerprint
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // the certificate is pinned below instead
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("the hub sent no certificate")
			}
			if got := fingerprint(raw[0]); got != want {
				return fmt.Errorf("the hub's certificate has fingerprint %s, not the pinned %s: not the hub these credentials were issued by (or it was set up again)", got, want)
			}
			return nil
		},
	}
}
