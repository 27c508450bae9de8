package netproxy

import (
	"errors"
	"io"
	"net/netip"

	"github.com/sluice-dev/sluice/netproxy/netrule"
)

// TLS framing (RFC 8446 section 5.1, 4.1.2; RFC 6066 section 3).
const (
	recordTypeHandshake   = 22
	handshakeClientHello  = 1
	extensionServerName   = 0
	serverNameHostName    = 0
	maxRecordPayload      = 1<<14 + 2048 // TLSCiphertext's bound; a plaintext record is smaller
	maxClientHello        = 1 << 16
	recordHeaderLen       = 5
	handshakeHeaderLen    = 4
	maxServerNameEntryLen = 255
)

// errNotHello is a TLS stream whose first message is not a well-formed
// ClientHello.
var errNotHello = errors.New("netproxy: not a TLS ClientHello")

// readClientHello reads the TLS records that carry the first handshake
// message from r and returns them as read (raw, to be passed on) and the
// ClientHello's body. A read error is returned as is; anything else wrong
// is errNotHello.
func readClientHello(r io.Reader) (raw, hello []byte, err error) {
	var msg []byte
	for {
		var hdr [recordHeaderLen]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, nil, err
		}
		n := int(hdr[3])<<8 | int(hdr[4])
		if hdr[0] != recordTypeHandshake || hdr[1] != 3 || n == 0 || n > maxRecordPayload {
			return nil, nil, errNotHello
		}
		start := len(raw)
		raw = append(raw, hdr[:]...)
		raw = append(raw, make([]byte, n)...)
		if _, err := io.ReadFull(r, raw[start+recordHeaderLen:]); err != nil {
			return nil, nil, err
		}
		msg = append(msg, raw[start+recordHeaderLen:]...)
		if len(msg) < handshakeHeaderLen {
			continue
		}
		if msg[0] != handshakeClientHello {
			return nil, nil, errNotHello
		}
		size := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
		if size > maxClientHello {
			return nil, nil, errNotHello
		}
		if len(msg) >= handshakeHeaderLen+size {
			return raw, msg[handshakeHeaderLen : handshakeHeaderLen+size], nil
		}
		if len(raw) > maxClientHello+recordHeaderLen*8 {
			return nil, nil, errNotHello
		}
	}
}

// reader takes bounded pieces off a byte slice; a piece past the end
// sets bad and gives zero values.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) bytes(n int) []byte {
	if r.bad || n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() int {
	b := r.bytes(1)
	if b == nil {
		return 0
	}
	return int(b[0])
}

func (r *reader) u16() int {
	b := r.bytes(2)
	if b == nil {
		return 0
	}
	return int(b[0])<<8 | int(b[1])
}

// vec8 and vec16 read a length-prefixed vector.
func (r *reader) vec8() []byte  { return r.bytes(r.u8()) }
func (r *reader) vec16() []byte { return r.bytes(r.u16()) }

// serverName gives the host_name of a ClientHello body's server_name
// extension, lower case without a trailing dot; "" when there is none. A
// malformed hello, a repeated extension, more than one host_name and a
// host_name that is neither a host name nor an IP address are errors.
func serverName(hello []byte) (string, error) {
	r := &reader{b: hello}
	r.bytes(2)  // legacy_version
	r.bytes(32) // random
	if len(r.vec8()) > 32 {
		return "", errNotHello // legacy_session_id
	}
	if suites := r.vec16(); len(suites) < 2 || len(suites)%2 != 0 {
		return "", errNotHello
	}
	if len(r.vec8()) < 1 { // legacy_compression_methods
		return "", errNotHello
	}
	if r.bad {
		return "", errNotHello
	}
	if len(r.b) == 0 {
		return "", nil // no extensions
	}
	exts := &reader{b: r.vec16()}
	if r.bad || len(r.b) != 0 {
		return "", errNotHello
	}
	seen := map[int]bool{}
	name := ""
	for len(exts.b) > 0 {
		typ := exts.u16()
		data := exts.vec16()
		if exts.bad || seen[typ] {
			return "", errNotHello
		}
		seen[typ] = true
		if typ != extensionServerName {
			continue
		}
		n, err := parseServerName(data)
		if err != nil {
			return "", err
		}
		name = n
	}
	return name, nil
}

// parseServerName reads the server_name extension's ServerNameList.
func parseServerName(data []byte) (string, error) {
	r := &reader{b: data}
	list := &reader{b: r.vec16()}
	if r.bad || len(r.b) != 0 || len(list.b) == 0 {
		return "", errNotHello
	}
	name := ""
	for len(list.b) > 0 {
		typ := list.u8()
		host := list.vec16()
		if list.bad || len(host) == 0 || len(host) > maxServerNameEntryLen {
			return "", errNotHello
		}
		if typ != serverNameHostName {
			continue
		}
		if name != "" {
			return "", errNotHello
		}
		if a, err := netip.ParseAddr(string(host)); err == nil {
			name = a.Unmap().String()
			continue
		}
		n, err := netrule.NormalName(string(host))
		if err != nil {
			return "", errNotHello
		}
		name = n
	}
	return name, nil
}
