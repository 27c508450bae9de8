// Package screen is the emulated terminal behind the console's output pane.
//
// A Screen feeds one run's output through a pinned x/vt emulator and hands
// the console the visible screen, or a stretch of scrollback, as lines that
// are safe to embed in a lipgloss layout. It owns the pin and the emulator's
// workarounds, so nothing else in sluice talks to x/vt directly.
//
// The package never lets a child's escape sequences reach the real terminal:
// Render emits text and SGR (colour and attribute) sequences only, never
// cursor movement, screen or line erasure, titles (OSC 0/1/2), the clipboard
// (OSC 52), hyperlinks (OSC 8), bells, DCS, APC, PM or SOS strings, or raw C0
// and C1 control characters. No Render line is wider than the screen, and a
// line that carries styling ends with an SGR reset, so a child cannot reach
// past its pane.
//
// It never blocks its producer on the console or on the child: the answers
// the emulator gives to queries (DA, DSR, colour reports) go to the reply
// callback through a small queue and are dropped when that queue is full.
// It never lets one Write or one escape sequence hold the console for long:
// Write feeds the emulator in slices of a few milliseconds' work, counts
// that x/vt would loop over (REP, ECH, CHT, CBT) are cut to a screenful, and
// a Write too big to replay quickly (FloodSize) resets the screen and
// replays only its tail. So it does not keep every byte: the runner's log
// does. The scrollback holds the last ScrollbackLines lines. Nor does it let
// the emulator crash the console: margins beyond the screen, on which x/vt
// panics, are clamped, and any other panic inside x/vt is recovered by
// resetting the screen.
//
// Input is treated as the output of a terminal whose tty does ONLCR: every
// LF is fed to the emulator as CR LF, because exec turns OPOST off so that
// its log is byte-exact. Output that already has CR LF renders the same.
// Invalid UTF-8 is shown as U+FFFD rather than read as 8-bit C1 controls,
// which x/vt would otherwise obey.
package screen
