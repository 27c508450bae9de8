package queue

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"time"
)

// ValidID reports whether id is a well-formed request id: the grammar
// ^[0-9A-Za-z][0-9A-Za-z_-]{0,63}$ of protocol section 3. It admits no '/',
// '.' or leading '-', so an id is always safe as a single path element.
// (Written out rather than a regexp: every sluice process would compile it
// at start-up.)
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= '0' && c <= '9', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// NewID returns a new time-sortable request id: a ULID (48 bits of Unix
// milliseconds, 80 random bits, in Crockford's base 32). Ids from one
// process increase strictly even within a millisecond: the random part of
// the last one plus one. (Written out rather than taken from a ULID
// package: its package init seeds a random source in every sluice process,
// an agent's hook included, whether or not it makes an id.)
func NewID() string {
	ms := uint64(time.Now().UnixMilli())
	idMu.Lock()
	defer idMu.Unlock()
	if ms > idLast.ms {
		idLast.ms = ms
		randomize(&idLast.rnd)
	} else if !increment(&idLast.rnd) {
		// 2^80 ids in one millisecond (or the clock went back and the
		// count ran out): borrow the next millisecond.
		idLast.ms++
		randomize(&idLast.rnd)
	}
	return encodeULID(idLast.ms, &idLast.rnd)
}

var (
	idMu   sync.Mutex
	idLast struct {
		ms  uint64
		rnd [10]byte
	}
)

// randomize fills b from the runtime's generator (ChaCha8, seeded by the
// kernel at exec): ids need to differ between processes, not to be
// secret (they are file names in the spool), and crypto/rand's first read
// in a process costs a getrandom state mapping and a timer.
func randomize(b *[10]byte) {
	binary.BigEndian.PutUint64(b[:8], rand.Uint64())
	binary.BigEndian.PutUint16(b[8:], uint16(rand.Uint32()))
}

// increment adds one to the big-endian b, reporting false if it wrapped.
func increment(b *[10]byte) bool {
	for i := len(b) - 1; i >= 0; i-- {
		b[i]++
		if b[i] != 0 {
			return true
		}
	}
	return false
}

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// encodeULID writes the 128 bits ms(48) || rnd(80) as 26 base-32 digits,
// the first taking the top 3 bits.
func encodeULID(ms uint64, rnd *[10]byte) string {
	hi := ms<<16 | uint64(rnd[0])<<8 | uint64(rnd[1]) // bits 127..64
	var lo uint64                                     // bits 63..0
	for _, c := range rnd[2:] {
		lo = lo<<8 | uint64(c)
	}
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}
