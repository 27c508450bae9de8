package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ExplainFlagErr is what to say about err, an error of fs.Parse: the flag
// package's own line, with its "parse error" replaced by the kind of value
// the flag wants, and for a flag that does not exist the ones with a
// name close to it (hidden flags are not proposed). Each line ends in a
// newline.
func ExplainFlagErr(fs *flag.FlagSet, hidden map[string]bool, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) {
			if !hidden[f.Name] {
				names = append(names, f.Name)
			}
		})
		if near := DidYouMean(strings.TrimPrefix(name, "-"), names); len(near) > 0 {
			return fmt.Sprintf("%s\ndid you mean %s?\n", msg, OrList(near, func(n string) string { return "--" + n }))
		}
		return msg + "\n"
	}
	// invalid value "V" for flag -NAME: parse error
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.LastIndex(rest, " for flag -"); i >= 0 {
			value, _ := strconv.Unquote(rest[:i])
			name, why, _ := strings.Cut(rest[i+len(" for flag -"):], ": ")
			if f := fs.Lookup(name); f != nil {
				if want := wants(f, value); want != "" {
					why = want
				}
			}
			return fmt.Sprintf("invalid value %q for flag -%s: %s\n", value, name, why)
		}
	}
	return msg + "\n"
}

// wants says what kind of value flag f takes, for one that did not
// parse; "" when the flag package's own words are as good.
func wants(f *flag.Flag, value string) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		if n, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil && n >= 0 {
			v := strings.TrimSpace(value)
			return fmt.Sprintf("a duration needs a unit, such as %ss or %sm", v, v)
		}
		return "want a duration, such as 30s, 5m or 1h30m"
	case int, int64:
		return "want a whole number"
	case uint, uint64:
		return "want a whole number, 0 or more"
	case float64:
		return "want a number"
	}
	return ""
}
