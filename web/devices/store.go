package devices

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/queue"
)

// Device is one paired browser. Its secret lives in the browser's cookie
// only; the store keeps its SHA-256 (a 256-bit random secret needs no
// slower hash).
type Device struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	SecretSHA256 string    `json:"secret_sha256"`
	PairedAt     time.Time `json:"paired_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	By           string    `json:"by"`                   // the person who made the pairing code
	UserAgent    string    `json:"user_agent,omitempty"` // as the browser said at pairing, for 'devices'
	// LastSeen is when the device last reached the server (to within
	// SeenEvery); zero when it has not since pairing.
	LastSeen time.Time `json:"last_seen,omitzero"`
	// Passkeys are the device's WebAuthn credentials (public keys), each
	// as the web server encoded it: this package keeps them and never
	// reads them, so that it needs no WebAuthn library (nor net/http).
	Passkeys []json.RawMessage `json:"passkeys,omitempty"`
}

// Store is the web approver's state directory: devices.json (the paired
// devices) and pairing.json (the one pairing code waiting, if any), both
// mode 0600, changed only under an flock on .lock and replaced whole
// (write, sync, rename). Any number of processes may share it: the server
// and 'sluice web pair', 'devices', 'revoke'. Readers see a change at the
// next look: Device stats the file on every call.
type Store struct {
	dir string

	mu    sync.Mutex
	stamp fileID
	devs  []Device
}

// fileID tells whether devices.json was replaced.
type fileID struct {
	ino, size int64
	mtime     time.Time
	exists    bool
}

// Errors callers branch on.
var (
	ErrNoCode      = errors.New("devices: no pairing code is waiting (make one with 'sluice web pair')")
	ErrCodeExpired = errors.New("devices: the pairing code expired; make a new one with 'sluice web pair'")
	ErrCodeSpent   = errors.New("devices: too many wrong tries; the pairing code is void, make a new one with 'sluice web pair'")
	ErrWrongCode   = errors.New("devices: wrong pairing code")
	ErrNoDevice    = errors.New("devices: no such device")
)

// Pairing limits (issue 33): a code is good once, for 5 minutes, and for
// 5 tries.
const (
	CodeTTL   = 5 * time.Minute
	CodeTries = 5
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// ValidName reports whether s may name a device: 1-32 of a-z 0-9 -, not
// starting with -.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// Open opens (making it, mode 0700) the state directory dir. It
// refuses a directory others may write to, or one that is a symlink.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("devices: state: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("devices: state: %w", err)
	}
	switch {
	case !fi.IsDir():
		return nil, fmt.Errorf("devices: state %s is not a directory (a symlink?)", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("devices: state %s is mode %o; others must not read it: chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return nil, fmt.Errorf("devices: state %s is not yours", dir)
	}
	return &Store{dir: dir}, nil
}

// Dir is the state directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(name string) string { return filepath.Join(s.dir, name) }

// locked runs fn holding the store's flock.
func (s *Store) locked(fn func() error) error {
	f, err := os.OpenFile(s.path(".lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("devices: lock: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("devices: lock: %w", err)
	}
	return fn()
}

// readJSON reads a small state file into v; false when it is missing.
func (s *Store) readJSON(name string, v any) (bool, error) {
	f, err := os.OpenFile(s.path(name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("devices: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	if err := dec.Decode(v); err != nil {
		return false, fmt.Errorf("devices: %s: %w", s.path(name), err)
	}
	return true, nil
}

// writeJSON replaces a state file with v, mode 0600.
func (s *Store) writeJSON(name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf("devices: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("devices: write %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("devices: write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("devices: write %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), s.path(name)); err != nil {
		return fmt.Errorf("devices: write %s: %w", name, err)
	}
	return nil
}

const devicesFile = "devices.json"

// Devices returns the paired devices, re-read if the file changed.
func (s *Store) Devices() ([]Device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reload(); err != nil {
		return nil, err
	}
	return append([]Device(nil), s.devs...), nil
}

// reload re-reads devices.json when it is not the file last read.
func (s *Store) reload() error {
	var id fileID
	if fi, err := os.Lstat(s.path(devicesFile)); err == nil {
		id = fileID{size: fi.Size(), mtime: fi.ModTime(), exists: true}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			id.ino = int64(st.Ino)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("devices: %w", err)
	}
	if id == s.stamp && (id.exists || s.devs == nil) {
		return nil
	}
	var devs []Device
	if _, err := s.readJSON(devicesFile, &devs); err != nil {
		return err
	}
	s.devs, s.stamp = devs, id
	return nil
}

// Session finds the device a cookie value (ID.SECRET) belongs to: known,
// secret matching, not expired at now. The device file is looked at on
// every call, so a revocation holds at the next request.
func (s *Store) Session(cookie string, now time.Time) (*Device, error) {
	id, secret, ok := splitCookie(cookie)
	if !ok {
		return nil, ErrNoDevice
	}
	devs, err := s.Devices()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(secret))
	for i := range devs {
		d := &devs[i]
		if d.ID != id {
			continue
		}
		want, err := hex.DecodeString(d.SecretSHA256)
		if err != nil || subtle.ConstantTimeCompare(want, sum[:]) != 1 || !now.Before(d.ExpiresAt) {
			return nil, ErrNoDevice
		}
		return d, nil
	}
	return nil, ErrNoDevice
}

func splitCookie(v string) (id, secret string, ok bool) {
	for i := 0; i < len(v); i++ {
		if v[i] == '.' {
			id, secret = v[:i], v[i+1:]
			return id, secret, id != "" && len(secret) >= 32
		}
	}
	return "", "", false
}

// Revoke removes the device named name and returns it.
func (s *Store) Revoke(name string) (*Device, error) {
	var gone *Device
	err := s.locked(func() error {
		var devs []Device
		if _, err := s.readJSON(devicesFile, &devs); err != nil {
			return err
		}
		for i := range devs {
			if devs[i].Name == name {
				d := devs[i]
				gone = &d
				devs = append(devs[:i], devs[i+1:]...)
				return s.writeJSON(devicesFile, devs)
			}
		}
		return fmt.Errorf("%w named %q", ErrNoDevice, name)
	})
	return gone, err
}

// pendingCode is pairing.json: the one code that may pair a device.
type pendingCode struct {
	CodeSHA256 string    `json:"code_sha256"`
	Name       string    `json:"name"`
	By         string    `json:"by"`
	ExpiresAt  time.Time `json:"expires_at"`
	Tries      int       `json:"tries"`
}

const pairingFile = "pairing.json"

// codeAlphabet has no 0/O, 1/I/L: a code is read off a screen and typed.
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

// NewCode makes the pairing code for a device to be called name (replacing
// any code still waiting) and returns it: 10 characters (~49 bits), good
// once, until now+CodeTTL, for CodeTries tries. by is who made it.
func (s *Store) NewCode(name, by string, now time.Time) (string, error) {
	if !ValidName(name) {
		return "", fmt.Errorf("devices: device name %q: use 1-32 of a-z 0-9 -, not starting with -", name)
	}
	buf := make([]byte, 10)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	code := make([]byte, len(buf))
	for i, b := range buf {
		code[i] = codeAlphabet[int(b)%len(codeAlphabet)]
	}
	err := s.locked(func() error {
		var devs []Device
		if _, err := s.readJSON(devicesFile, &devs); err != nil {
			return err
		}
		for _, d := range devs {
			if d.Name == name && now.Before(d.ExpiresAt) {
				return fmt.Errorf("devices: a device is already paired as %q; revoke it first ('sluice web revoke %s') or pick another name", name, name)
			}
		}
		sum := sha256.Sum256(code)
		return s.writeJSON(pairingFile, pendingCode{CodeSHA256: hex.EncodeToString(sum[:]), Name: name, By: by,
			ExpiresAt: now.Add(CodeTTL)})
	})
	return string(code), err
}

// NormalizeCode takes a code as typed: case, spaces and dashes do not count.
func NormalizeCode(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			out = append(out, c-'a'+'A')
		case c == ' ' || c == '-':
		default:
			out = append(out, c)
		}
	}
	return string(out)
}

// Pair spends the waiting pairing code on a new device: it returns the
// device and the cookie value (ID.SECRET) that is now its key. A wrong code
// counts a try; the fifth voids the code. ttl is how long the session
// lasts.
func (s *Store) Pair(code, userAgent string, ttl time.Duration, now time.Time) (*Device, string, error) {
	var dev *Device
	var cookie string
	err := s.locked(func() error {
		var pc pendingCode
		ok, err := s.readJSON(pairingFile, &pc)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNoCode
		}
		if !now.Before(pc.ExpiresAt) {
			_ = os.Remove(s.path(pairingFile))
			return ErrCodeExpired
		}
		if pc.Tries >= CodeTries {
			_ = os.Remove(s.path(pairingFile))
			return ErrCodeSpent
		}
		sum := sha256.Sum256([]byte(NormalizeCode(code)))
		want, _ := hex.DecodeString(pc.CodeSHA256)
		if subtle.ConstantTimeCompare(want, sum[:]) != 1 {
			pc.Tries++
			if pc.Tries >= CodeTries {
				_ = os.Remove(s.path(pairingFile))
				return ErrCodeSpent
			}
			if err := s.writeJSON(pairingFile, pc); err != nil {
				return err
			}
			return fmt.Errorf("%w (%d of %d tries left)", ErrWrongCode, CodeTries-pc.Tries, CodeTries)
		}
		// Spent before the device is written: a crash between the two
		// leaves no code to use twice.
		if err := os.Remove(s.path(pairingFile)); err != nil {
			return fmt.Errorf("devices: spend the pairing code: %w", err)
		}
		var devs []Device
		if _, err := s.readJSON(devicesFile, &devs); err != nil {
			return err
		}
		kept := devs[:0]
		for _, d := range devs {
			if d.Name != pc.Name && now.Before(d.ExpiresAt) { // expired sessions go
				kept = append(kept, d)
			}
		}
		idb := make([]byte, 12)
		secret := make([]byte, 32)
		if _, err := rand.Read(idb); err != nil {
			return err
		}
		if _, err := rand.Read(secret); err != nil {
			return err
		}
		sec := base64.RawURLEncoding.EncodeToString(secret)
		ssum := sha256.Sum256([]byte(sec))
		d := Device{ID: hex.EncodeToString(idb), Name: pc.Name, SecretSHA256: hex.EncodeToString(ssum[:]),
			PairedAt: now.UTC(), ExpiresAt: now.Add(ttl).UTC(), By: pc.By, UserAgent: Plain(userAgent, 120),
			LastSeen: now.UTC()}
		if err := s.writeJSON(devicesFile, append(kept, d)); err != nil {
			return err
		}
		dev, cookie = &d, d.ID+"."+sec
		return nil
	})
	return dev, cookie, err
}

// AddPasskey adds a passkey (its JSON) to the device with id.
func (s *Store) AddPasskey(id string, cred json.RawMessage) error {
	return s.locked(func() error {
		var devs []Device
		if _, err := s.readJSON(devicesFile, &devs); err != nil {
			return err
		}
		for i := range devs {
			if devs[i].ID == id {
				devs[i].Passkeys = append(devs[i].Passkeys, cred)
				return s.writeJSON(devicesFile, devs)
			}
		}
		return ErrNoDevice
	})
}

// Plain is s made safe for one line of plain text: queue.Printable, cut
// to n runes (the last of them an ellipsis where it was cut). The page
// (web.Plain) cuts what it shows with it too.
func Plain(s string, n int) string {
	p, _ := queue.Printable(s)
	if utf8.RuneCountInString(p) <= n {
		return p
	}
	r := []rune(p)
	return string(r[:n-1]) + "…"
}
