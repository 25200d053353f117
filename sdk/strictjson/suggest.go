package strictjson

import "strings"

// Closest is the name of names that key most likely misspells: the same
// letters in another case or spelling style ("maxBytes" or "max-bytes"
// for "max_bytes"), or else the nearest at most two edits away ("unit" for
// "units"); "" when none is that close. It is the one "did you mean" rule
// of the host's config and of plugins' options.
func Closest(key string, names []string) string {
	norm := func(s string) string { return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s)) }
	k := norm(key)
	best, bestD := "", 3
	for _, n := range names {
		if norm(n) == k {
			return n
		}
		if d := distance(norm(n), k); d < bestD && d < len(key) {
			best, bestD = n, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
