package hub

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// termText keeps what a box streams as text a terminal shows as such:
// printable characters, newlines and tabs; escape sequences and other
// control characters (a title, a clipboard write) are dropped.
func termText(p []byte) []byte {
	out := make([]byte, 0, len(p))
	for len(p) > 0 {
		r, n := utf8.DecodeRune(p)
		switch {
		case r == utf8.RuneError && n <= 1:
		case r == '\n' || r == '\t':
			out = append(out, byte(r))
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		default:
			out = append(out, p[:n]...)
		}
		p = p[n:]
	}
	return out
}

// isTerminal reports whether r is a terminal a person answers on.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// readYes reads one line and reports whether it says yes.
func readYes(r io.Reader) bool {
	line, _ := bufio.NewReader(r).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
