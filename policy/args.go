package policy

import "strings"

// opword is one word after a program's name, split into option or operand.
type opword struct {
	w      word
	option bool  // starts with '-' (and is not "-" or after "--")
	value  *word // the option's value, when the option takes one
	index  int   // position in the argument list
}

// splitArgs sorts args into options (with the values valueOpts say they
// take) and operands. "--" ends the options; it is kept as an operand so
// table conditions can name it (git checkout -- .).
func splitArgs(args []word, valueOpts []string) []opword {
	out := make([]opword, 0, len(args))
	ended := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if ended || a.dyn || len(a.val) < 2 || a.val[0] != '-' {
			out = append(out, opword{w: a, index: i})
			continue
		}
		if a.val == "--" {
			ended = true
			out = append(out, opword{w: a, index: i})
			continue
		}
		ow := opword{w: a, option: true, index: i}
		if takesValue(a.val, valueOpts) && i+1 < len(args) {
			v := args[i+1]
			ow.value = &v
			i++
		}
		out = append(out, ow)
	}
	return out
}

// takesValue reports whether option opt consumes the next word: it is one
// of valueOpts exactly, or a short-option bundle ending in one (tar -xzf F).
func takesValue(opt string, valueOpts []string) bool {
	if strings.Contains(opt, "=") {
		return false
	}
	for _, v := range valueOpts {
		// --directory, or an abbreviation of it (--dir) as getopt_long
		// takes one: the value must not be read as an operand or a
		// subcommand.
		if opt == v || len(opt) >= minLongPrefix && strings.HasPrefix(opt, "--") && strings.HasPrefix(v, opt) {
			return true
		}
	}
	if len(opt) > 2 && opt[1] != '-' {
		last := "-" + opt[len(opt)-1:]
		for _, v := range valueOpts {
			if v == last {
				return true
			}
		}
	}
	return false
}

// optionValue returns the value given to option name in ow: "-o F",
// "-oF", "--output F" or "--output=F".
func optionValue(ow opword, name string) (word, bool) {
	v := ow.w.val
	opt, val, hasVal := strings.Cut(v, "=")
	switch {
	case isAbbrev(v, name) && ow.value != nil:
		return *ow.value, true
	case strings.HasPrefix(name, "--") && hasVal && isAbbrev(opt, name):
		return word{val: val, src: ow.w.src}, true
	case len(name) == 2 && name[1] != '-' && len(v) > 2 && v[1] != '-' && strings.HasPrefix(v, name):
		return word{val: v[2:], src: ow.w.src}, true
	case len(name) == 2 && name[1] != '-' && len(v) > 2 && v[1] != '-' && v[len(v)-1] == name[1] && ow.value != nil:
		// A bundle ending in the option: tar -cf FILE, curl -so FILE.
		return *ow.value, true
	}
	return word{}, false
}

// hasFlag reports whether option word v matches a table flag: "-r"
// matches inside a short bundle ("-rf"), "--force" also as "--force=x",
// "-delete" exactly, and an entry ending in '*' by prefix.
//
// A single-letter flag matches any short bundle holding its letter, even
// where the rest of the bundle might be an attached value (sed -ni, rm
// -vrf): a false match only escalates.
func hasFlag(v, flag string) bool {
	short := strings.TrimSuffix(flag, "*")
	if len(short) == 2 && short[0] == '-' && short[1] != '-' && len(v) >= 2 && v[0] == '-' && v[1] != '-' {
		return strings.IndexByte(v[1:], short[1]) >= 0
	}
	if strings.HasSuffix(flag, "*") {
		// "--eval*" also takes "--eva": an abbreviation of its stem.
		name, _, _ := strings.Cut(v, "=")
		return strings.HasPrefix(v, short) || strings.HasPrefix(short, "--") && isAbbrev(name, short)
	}
	if v == flag || strings.HasPrefix(v, flag+"=") {
		return true
	}
	// getopt_long and git take any unambiguous prefix of a long option
	// (--checkpoint-act for --checkpoint-action): a prefix matches.
	// Whether it is unambiguous among the program's other options is not
	// known here, so a prefix that could mean another option also
	// matches: the verdict can only get stricter.
	if len(flag) > 3 && strings.HasPrefix(flag, "--") && strings.HasPrefix(v, "--") {
		name, _, _ := strings.Cut(v, "=")
		return len(name) >= minLongPrefix && len(name) < len(flag) && strings.HasPrefix(flag, name)
	}
	return false
}

// isAbbrev reports whether v ("--dir") is long option name
// ("--directory") or an abbreviation of it at least minLongPrefix long.
func isAbbrev(v, name string) bool {
	return v == name || strings.HasPrefix(name, "--") && strings.HasPrefix(v, "--") &&
		len(v) >= minLongPrefix && len(v) < len(name) && strings.HasPrefix(name, v)
}

// minLongPrefix is the shortest abbreviation of a long option taken for
// it, dashes included ("--op" for "--open-files-in-pager"): shorter ones
// are nearly always ambiguous, and getopt refuses those.
const minLongPrefix = 4

// operands returns the operand words (not options, not option values, not
// the "--" separator).
func operands(ops []opword) []word {
	var out []word
	for _, o := range ops {
		if !o.option && !(o.w.val == "--" && !o.w.dyn) {
			out = append(out, o.w)
		}
	}
	return out
}
