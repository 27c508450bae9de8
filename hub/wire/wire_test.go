package wire

import "testing"

// A run's output as a console shows it from the pieces that reached it:
// what did not is a marked line with its size, where it was lost (at the
// start, between pieces, at the end), on a line of its own; a piece that
// came twice is shown once; pieces without an offset (a box of an earlier
// version) are shown as they come.
func TestOutputTrack(t *testing.T) {
	type piece struct {
		off  *int64
		data string
	}
	at := func(n int64) *int64 { return &n }
	lost := func(n int64) string { return LostLine(n) + "\r\n" }
	for _, c := range []struct {
		name   string
		pieces []piece
		total  int64
		want   string
	}{
		{"whole", []piece{{at(0), "ab\n"}, {at(3), "cd\n"}}, 6, "ab\ncd\n"},
		{"lost between", []piece{{at(0), "ab\n"}, {at(10), "cd\n"}}, 13, "ab\n" + lost(7) + "cd\n"},
		{"lost mid-line", []piece{{at(0), "ab"}, {at(5), "cd\n"}}, 8, "ab\r\n" + lost(3) + "cd\n"},
		{"lost at the start", []piece{{at(4), "cd\n"}}, 7, lost(4) + "cd\n"},
		{"lost at the end", []piece{{at(0), "ab\n"}}, 9, "ab\n" + lost(6)},
		{"all lost", nil, 20, lost(20)},
		{"twice", []piece{{at(0), "ab\n"}, {at(0), "ab\n"}, {at(1), "b\ncd\n"}}, 6, "ab\ncd\n"},
		{"no offsets", []piece{{nil, "ab\n"}, {nil, "cd\n"}}, 0, "ab\ncd\n"},
	} {
		var tr OutputTrack
		got := ""
		for _, p := range c.pieces {
			got += string(tr.Piece(p.off, []byte(p.data)))
		}
		got += string(tr.End(c.total))
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if LostLine(12) != "⟨12 bytes lost while the hub was down⟩" {
		t.Errorf("LostLine(12) = %q", LostLine(12))
	}
}
