package e2e

import "github.com/sluice-dev/sluice/internal/syncbuf"

// Buffer collects a process's output, safe for its writes and the
// test's reads.
type Buffer = syncbuf.Buffer
