//go:build linux

package main

import (
	"fmt"
	"io"
)

// report gathers the figures by section, printed at the end.
type report struct {
	lines  []line
	missed int
}

type line struct{ section, text string }

func (r *report) add(section, text string) {
	fmt.Printf("  %s\n", text)
	r.lines = append(r.lines, line{section, text})
}

var sectionTitles = []struct{ key, title string }{
	{"output", "1. serve's peak RSS while one allowed command writes its output"},
	{"pending", "2. serve's peak RSS with the pending requests"},
	{"judge", "3. time to judge the pending requests"},
}

func (r *report) print(w io.Writer) {
	fmt.Fprintln(w)
	for _, s := range sectionTitles {
		printed := false
		for _, l := range r.lines {
			if l.section != s.key {
				continue
			}
			if !printed {
				fmt.Fprintln(w, s.title)
				printed = true
			}
			fmt.Fprintf(w, "  %s\n", l.text)
		}
	}
	if r.missed > 0 {
		fmt.Fprintf(w, "%d figure(s) missed their target\n", r.missed)
	} else {
		fmt.Fprintln(w, "every figure met its target")
	}
}
