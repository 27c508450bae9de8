// Package tui is sluice's console: one root bubbletea Model over the
// queue of pending requests, the detail of the selected one (its verdict,
// its command or diff), the output pane of runs, History, and the
// dialogs a decision opens, each a child that holds what it asks about
// and answers for that request only.
//
// The console reaches the engine through queue.Engine and its Observer
// (feed), and everything else through Options: a Previewer, a Terminal,
// Rules, Trusts, Undo, a Fleet. It imports neither policy nor exec.
//
// The package refuses, by design:
//   - I/O in View or Update: what reads files, judges or runs is a
//     tea.Cmd that returns a message (the header's trusts included);
//   - agent text on the terminal without escaping: whatever an agent
//     wrote goes through queue.Printable (plainText, styledText), and a
//     run's output only as SGR-styled cells (tui/screen);
//   - colour literals: every style comes from themes.Styles;
//   - approving by reflex: approve keys are inert for a grace period
//     after the selection changes or a request arrives, a command is
//     read to its end first, and Esc, or any key a dialog does not name,
//     means no.
package tui
