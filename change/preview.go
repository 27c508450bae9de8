package change

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/sluice-dev/sluice/queue"
)

// Preview is the diff a write, edit or patch request would make to the
// files as they are now, with roots as its jail (the directories policy
// gives the request; none allows every path): Plan, then Diff. It refuses
// what Plan refuses, with Plan's reason, and a request of another kind.
// The diff holds agent text raw; the caller escapes it for display.
func Preview(req *queue.Request, roots []string) (string, error) {
	c, err := Plan(req, roots)
	if err != nil {
		return "", err
	}
	return c.Diff(), nil
}

// maxPreviewFile is the largest file ReadPreview reads.
const maxPreviewFile = 8 << 20

// ReadPreview reads the file an agent's edit changes, for its preview,
// following symlinks as the agent does: a regular file of at most 8 MiB,
// opened without blocking (a file swapped for a FIFO does not hang the
// caller). A missing file is not an error: exists is false.
func ReadPreview(p string) (content string, exists bool, err error) {
	fi, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("%s is not a regular file", p)
	}
	if fi.Size() > maxPreviewFile {
		return "", false, fmt.Errorf("%s is over %d MiB", p, maxPreviewFile>>20)
	}
	// O_NONBLOCK: a file swapped for a FIFO since the Stat must not hang
	// the hook.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPreviewFile+1))
	if err != nil {
		return "", false, err
	}
	if len(data) > maxPreviewFile {
		return "", false, fmt.Errorf("%s is over %d MiB", p, maxPreviewFile>>20)
	}
	return string(data), true, nil
}
