package tui

import "fmt"

// isOpen reports whether the open dialog is a T.
func isOpen[T dialog](m *Model) bool {
	_, ok := m.dlg.(T)
	return ok
}

// dialogOf is the open dialog as a T (the zero T if it is not one).
func dialogOf[T dialog](m *Model) T {
	d, _ := m.dlg.(T)
	return d
}

// state names what the keys mean now, for a test's failure message.
func state(m *Model) string {
	if m.dlg != nil {
		return fmt.Sprintf("%T", m.dlg)
	}
	return m.mode.String()
}

// resizeFunc is a Terminal that takes sizes only.
type resizeFunc func(id string, rows, cols uint16)

func (resizeFunc) Input(string, []byte)                  {}
func (f resizeFunc) Resize(id string, rows, cols uint16) { f(id, rows, cols) }
