package screen

import (
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/vt"
)

// limitCounts makes x/vt's per-unit loops cost at most a screenful, and
// keeps margins on the screen. x/vt takes counts up to 2^31-1 and loops
// that many times for REP, ECH, CHT and CBT, so "x" ESC [ 2147483647 b
// would hold the lock, and freeze the console, for minutes. And it takes a
// DECSTBM bottom or DECSLRM right margin beyond the screen as given, then
// panics indexing rows that do not exist on the next scroll. The handlers
// registered here run before x/vt's own (it calls the newest first), change
// the parameters in place, and decline, so x/vt's handler runs with the
// corrected values and the same visible result.
func limitCounts(emu *vt.Emulator) {
	perLine := func(n int) int { return min(n, emu.Width()) }
	emu.RegisterCsiHandler('X', clampParam(0, perLine)) // ECH: erase n cells
	emu.RegisterCsiHandler('I', clampParam(0, perLine)) // CHT: n tab stops forward
	emu.RegisterCsiHandler('Z', clampParam(0, perLine)) // CBT: n tab stops back
	// REP: beyond a screenful, only the cursor's final column still
	// depends on n.
	emu.RegisterCsiHandler('b', clampParam(0, func(n int) int {
		w, cells := emu.Width(), emu.Width()*emu.Height()
		if n <= cells {
			return n
		}
		return cells + (n-cells)%w
	}))
	onScreen := func(n int) int { return min(n, emu.Height()) }
	emu.RegisterCsiHandler('r', clampParam(0, onScreen)) // DECSTBM top
	emu.RegisterCsiHandler('r', clampParam(1, onScreen)) // DECSTBM bottom
	emu.RegisterCsiHandler('s', clampParam(0, perLine))  // DECSLRM left
	emu.RegisterCsiHandler('s', clampParam(1, perLine))  // DECSLRM right
}

// clampParam returns a handler that replaces parameter i, if present, by
// limit of its value and lets the next handler act. x/vt reads parameters
// both from its argument and from its parser, which share one array.
func clampParam(i int, limit func(n int) int) vt.CsiHandler {
	return func(params ansi.Params) bool {
		if i >= len(params) {
			return false
		}
		n, _, ok := params.Param(i, 0)
		if ok && limit(n) != n {
			params[i] = ansi.Param(ansi.Parameter(limit(n), params[i].HasMore()))
		}
		return false
	}
}
