package screen

import uv "github.com/charmbracelet/ultraviolet"

// view is the scroll state, guarded by Screen.mu.
//
// Following, frozen is nil and Render draws the live screen. Scrolling up
// freezes a copy of the scrollback and the screen rows the view showed, and
// the view is a window offset lines above the bottom of that copy. The copy
// is what keeps the view still while output arrives: the emulator's
// scrollback drops its oldest lines once full and reports no count of lines
// pushed, so a position in it cannot be tracked across Writes.
type view struct {
	frozen []uv.Line // nil while following
	offset int       // lines between the window's bottom and the copy's
	height int       // rows of the last Render, to bound offset
}

// window returns the frozen lines of an n-line view, clamping the offset.
func (v *view) window(n int) []uv.Line {
	v.offset = min(v.offset, max(len(v.frozen)-n, 0))
	end := len(v.frozen) - v.offset
	return v.frozen[max(end-n, 0):end]
}

// ScrollUp moves the view n lines up, towards older output, and stops
// following: from then on the view stays put as output arrives. It does
// nothing if there is nothing above the view. On the alternate screen
// (full-screen programs) there is no scrollback to move into.
func (s *Screen) ScrollUp(n int) {
	if n < 1 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.viewHeight()
	if s.view.frozen == nil {
		s.freeze(h)
	}
	off := min(s.view.offset+n, max(len(s.view.frozen)-h, 0))
	if off == 0 && s.view.offset == 0 {
		s.view.frozen = nil // nothing above: keep following
		return
	}
	if off != s.view.offset {
		s.view.offset = off
		s.dirty.Store(true)
	}
}

// ScrollDown moves the view n lines down, towards newer output. Reaching
// the bottom of what was frozen follows the output again, as Follow does.
func (s *Screen) ScrollDown(n int) {
	if n < 1 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.view.frozen == nil {
		return
	}
	s.view.offset = min(s.view.offset, max(len(s.view.frozen)-s.viewHeight(), 0)) - n
	if s.view.offset <= 0 {
		s.follow()
	}
	s.dirty.Store(true)
}

// Follow jumps to the bottom and follows the output again.
func (s *Screen) Follow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.follow()
}

// Following reports whether the view follows the output, that is, whether
// it is not scrolled up.
func (s *Screen) Following() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view.frozen == nil
}

func (s *Screen) follow() {
	if s.view.frozen != nil {
		s.view.frozen, s.view.offset = nil, 0
		s.dirty.Store(true)
	}
}

// viewHeight returns the rows of the view: those of the last Render, or
// the whole screen before the first.
func (s *Screen) viewHeight() int {
	rows := s.emu.Height()
	if s.view.height > 0 {
		return min(s.view.height, rows)
	}
	return rows
}

// freeze copies the scrollback and the screen rows down to the bottom of an
// h-row following view. Scrollback lines are immutable in x/vt (each is a
// fresh copy when pushed), so only the slice is copied; screen rows change
// in place and are copied cell by cell.
func (s *Screen) freeze(h int) {
	bottom := s.followTop(h) + h
	var sb []uv.Line
	if !s.emu.IsAltScreen() {
		sb = s.emu.Scrollback().Lines()
	}
	lines := make([]uv.Line, 0, len(sb)+bottom)
	lines = append(lines, sb...)
	w := s.emu.Width()
	cells := make([]uv.Cell, w*bottom)
	for y := range bottom {
		row := cells[y*w : (y+1)*w : (y+1)*w]
		for x := range row {
			row[x] = cellOrEmpty(s.emu.CellAt(x, y))
		}
		lines = append(lines, row)
	}
	s.view.frozen, s.view.offset = lines, 0
}
