package netproxy

import (
	"testing"

	"go.uber.org/goleak"
)

// Every connection, question and relay ends with its proxy: nothing the
// tests started outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
