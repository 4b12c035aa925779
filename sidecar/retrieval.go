package sidecar

// TopK is Python's ids[:k], which the reference uses for the top k: k past
// the end gives all ids, and a negative k drops the last |k| ids (nothing
// when |k| >= len(ids)). The result aliases ids.
func TopK(ids []string, k int) []string {
	if k < 0 {
		k += len(ids)
		if k < 0 {
			k = 0
		}
	}
	if k > len(ids) {
		k = len(ids)
	}
	return ids[:k]
}

// RecallStrict reports whether every gold id is among the first k retrieved
// ids; vacuously true for no gold ids, as in the reference.
func RecallStrict(gold, retrieved []string, k int) bool {
	return allIn(gold, TopK(retrieved, k))
}

// PrecisionAtK is |G ∩ R_k| / |R_k| over distinct ids, 0 when R_k is empty.
func PrecisionAtK(gold, retrieved []string, k int) float64 {
	rk := TopK(retrieved, k)
	if len(rk) == 0 {
		return 0
	}
	return float64(intersectCount(gold, rk)) / float64(distinctCount(rk))
}

// RecallAtK is |G ∩ R_k| / |G| over distinct ids; ok is false when G is
// empty, since such items are left out of R@k.
func RecallAtK(gold, retrieved []string, k int) (value float64, ok bool) {
	g := distinctCount(gold)
	if g == 0 {
		return 0, false
	}
	return float64(intersectCount(gold, TopK(retrieved, k))) / float64(g), true
}

// countIn returns |a ∩ b|.
func countIn(a, b map[string]struct{}) int {
	n := 0
	for id := range a {
		if _, ok := b[id]; ok {
			n++
		}
	}
	return n
}
