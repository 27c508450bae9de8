package cli

import (
	"strings"
	"unicode/utf8"
)

// DidYouMean returns the names closest to word, for an "unknown ..."
// message: a name that differs only in case, else those within a
// typo or two (an edit distance of 1 for words of 2 to 4 characters, 2
// for longer ones, a swap of two neighbours counting as one), else the
// one name word is the start of (3 characters or more). Nearest first,
// in the order given among equals; none when nothing is close.
func DidYouMean(word string, names []string) []string {
	if word == "" {
		return nil
	}
	for _, n := range names {
		if n != word && strings.EqualFold(n, word) {
			return []string{n}
		}
	}
	limit := 1
	switch n := utf8.RuneCountInString(word); {
	case n == 1:
		return nil // any short name is a typo away
	case n > 4:
		limit = 2
	}
	var best []string
	bestD := limit + 1
	for _, n := range names {
		if n == word {
			continue
		}
		switch d := editDistance(word, n); {
		case d > limit:
		case d < bestD:
			best, bestD = []string{n}, d
		case d == bestD:
			best = append(best, n)
		}
	}
	if len(best) > 0 {
		return best
	}
	var starts []string
	if utf8.RuneCountInString(word) >= 3 {
		for _, n := range names {
			if strings.HasPrefix(n, word) {
				starts = append(starts, n)
			}
		}
	}
	if len(starts) == 1 {
		return starts
	}
	return nil
}

// editDistance is the optimal string alignment distance between a and b
// (insertions, deletions, substitutions and swaps of neighbours), in
// runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// OrList joins names as "a", "a or b", "a, b or c", each formatted by f.
func OrList(names []string, f func(string) string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = f(n)
	}
	if len(q) <= 1 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
