package queue

import "io"

// TermSafe passes a child's output to a person's terminal without the
// sequences that act on the terminal rather than print: every escape
// sequence (CSI, OSC such as OSC 52's clipboard writes, DCS, APC, PM,
// SOS, two-byte ESC forms) and every control character but newline,
// carriage return, tab and backspace, C1 controls included. It keeps its
// state across writes, so a sequence split between two reads is still
// dropped whole. (sluice approve and the hub's consoles use it.)
type TermSafe struct {
	W     io.Writer
	state int  // tsText, tsEsc, tsCSI, tsString, tsStringEsc
	c2    bool // the previous byte was 0xC2 (a C1 control may follow)
}

const (
	tsText = iota
	tsEsc
	tsCSI
	tsString    // OSC, DCS, APC, PM, SOS: until BEL or ESC \
	tsStringEsc // ESC seen inside a string
)

func (t *TermSafe) Write(p []byte) (int, error) {
	out := make([]byte, 0, len(p))
	for _, b := range p {
		if t.c2 {
			t.c2 = false
			if b >= 0x80 && b <= 0x9f {
				continue // a C1 control, UTF-8 encoded: dropped
			}
			out = append(out, 0xc2)
		}
		switch t.state {
		case tsText:
			switch {
			case b == 0x1b:
				t.state = tsEsc
			case b == 0xc2:
				t.c2 = true
			case b < 0x20 && b != '\n' && b != '\r' && b != '\t' && b != '\b', b == 0x7f:
				// other controls: dropped
			default:
				out = append(out, b)
			}
		case tsEsc:
			switch b {
			case '[':
				t.state = tsCSI
			case ']', 'P', '_', '^', 'X':
				t.state = tsString
			default:
				t.state = tsText // a two-byte sequence: dropped
			}
		case tsCSI:
			if b >= 0x40 && b <= 0x7e {
				t.state = tsText
			}
		case tsString:
			switch b {
			case 0x07:
				t.state = tsText
			case 0x1b:
				t.state = tsStringEsc
			}
		case tsStringEsc:
			if b == '\\' {
				t.state = tsText
			} else {
				t.state = tsString
			}
		}
	}
	if _, err := t.W.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
