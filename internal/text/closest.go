package text

import "strings"

// Closest returns the candidate nearest to word when it is near enough to
// be a typo of it ("promt" → "prompt", "htp" → "http", "Prompt" →
// "prompt"): at most one edit for short words, two from six letters on,
// compared without case. "" when none is that near, or when word is
// itself a candidate.
func Closest(word string, candidates []string) string {
	w := strings.ToLower(word)
	limit := 1
	if len(w) >= 6 {
		limit = 2
	}
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if c == word {
			return ""
		}
		if d := editDistance(w, strings.ToLower(c), limit); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// DidYouMean is Closest worded for a message: ` (did you mean "x"?)`, or
// "" when nothing is near.
func DidYouMean(word string, candidates []string) string {
	if c := Closest(word, candidates); c != "" {
		return ` (did you mean "` + c + `"?)`
	}
	return ""
}

// editDistance is the Damerau–Levenshtein (optimal string alignment)
// distance of a and b, or limit+1 once it must exceed limit: a swap of two
// neighbours ("tiemout") is one edit.
func editDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > limit || -d > limit {
		return limit + 1
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
