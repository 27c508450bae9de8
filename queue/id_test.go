package queue

import (
	"bytes"
	"crypto/rand"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// NewID's ids are ULIDs as the ulid package writes and reads them.
func TestEncodeULIDMatchesULID(t *testing.T) {
	for i := range 10000 {
		ms := uint64(i) * 0x9E3779B97 % (1 << 48)
		if i == 0 {
			ms = 1<<48 - 1
		}
		var rnd [10]byte
		rand.Read(rnd[:])
		if i == 1 {
			rnd = [10]byte{}
		}
		want := ulid.MustNew(ms, bytes.NewReader(rnd[:])).String()
		if got := encodeULID(ms, &rnd); got != want {
			t.Fatalf("encodeULID(%d, %x) = %s, want %s", ms, rnd, got, want)
		}
	}
}

// Ids carry the time they were made and sort in the order they were made,
// also within a millisecond; each is a valid id.
func TestNewIDOrdered(t *testing.T) {
	before := time.Now().Add(-time.Millisecond)
	prev := ""
	for range 5000 {
		id := NewID()
		if !ValidID(id) || len(id) != 26 {
			t.Fatalf("NewID() = %q: not a 26-digit id", id)
		}
		if id <= prev {
			t.Fatalf("id %s after %s: not increasing", id, prev)
		}
		prev = id
	}
	u, err := ulid.ParseStrict(prev)
	if err != nil {
		t.Fatal(err)
	}
	if at := ulid.Time(u.Time()); at.Before(before) || at.After(time.Now().Add(time.Millisecond)) {
		t.Errorf("id's time %v, not now", at)
	}
}

// When the random part runs out within a millisecond, the next id moves
// to the next millisecond and still sorts after.
func TestNewIDCarry(t *testing.T) {
	idMu.Lock()
	saved := idLast
	t.Cleanup(func() { idMu.Lock(); idLast = saved; idMu.Unlock() })
	idLast.ms = uint64(time.Now().Add(time.Hour).UnixMilli()) // as if the clock went back
	for i := range idLast.rnd {
		idLast.rnd[i] = 0xff
	}
	last := encodeULID(idLast.ms, &idLast.rnd)
	idMu.Unlock()
	if id := NewID(); id <= last {
		t.Fatalf("id %s after %s: not increasing across the carry", id, last)
	}
}
