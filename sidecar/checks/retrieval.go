package checks

import (
	"encoding/binary"
	"math/bits"

	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

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

// rankedIDs is e.IDs() without its copy when retrieved_ids already lists
// the ids of topk, as producers usually send both.
func rankedIDs(e *wire.TraceEvent) []string {
	if e.TopK == nil || len(e.RetrievedIDs) != len(e.TopK) || e.RetrievedIDs == nil {
		return e.IDs()
	}
	for i := range e.TopK {
		if e.TopK[i].ID != e.RetrievedIDs[i] {
			return e.IDs()
		}
	}
	return e.RetrievedIDs
}

// retrievalPerK fills RecallStrict, PrecisionAtK and RecallAtK of o k by
// k, with the functions of those names, and the ranking metrics
// (rankingPlain): what retrievalAtKs stands in for, on lists of any
// length.
func retrievalPerK(gold, ids []string, ks []int, o *window.Observation) {
	for i, k := range ks {
		if RecallStrict(gold, ids, k) {
			o.RecallStrict |= 1 << i
		}
		o.PrecisionAtK = append(o.PrecisionAtK, PrecisionAtK(gold, ids, k))
		if r, ok := RecallAtK(gold, ids, k); ok {
			o.RecallAtK = append(o.RecallAtK, r)
			o.HasRecallAtK = true
		}
	}
	rankingPlain(gold, ids, ks, o)
}

// retrievalAtKs fills RecallStrict, PrecisionAtK, RecallAtK and the
// ranking metrics of o for every k at once, with the counts RecallStrict, PrecisionAtK and
// RecallAtK would make k by k: for each rank, whether its id is the first
// of its kind and whether it is a gold id. It handles lists of up to 64
// ranked and smallSet gold ids and says false otherwise.
func retrievalAtKs(gold, ids []string, ks []int, o *window.Observation) bool {
	if len(ids) > 64 || len(gold) > smallSet {
		return false
	}
	// Strings are compared only where their keys agree (idKey: equal
	// strings have equal keys), which for distinct ids is nowhere.
	var idKeys [64]uint64
	var goldKeys [smallSet]uint64
	for i, id := range gold {
		goldKeys[i] = idKey(id)
	}
	var first, hit uint64 // bit j: ids[j] is new in ids[:j+1]; ids[j] is a gold id
	for j, id := range ids {
		k := idKey(id)
		idKeys[j] = k
		seen := false
		for i := 0; i < j; i++ {
			if idKeys[i] == k && ids[i] == id {
				seen = true
				break
			}
		}
		if seen {
			continue
		}
		first |= 1 << j
		for i := range gold {
			if goldKeys[i] == k && gold[i] == id {
				hit |= 1 << j
				break
			}
		}
	}
	// The ranks needed to hold every gold id (-1: no gold ids; past the
	// end: some gold id is not retrieved). hit marks the first rank of
	// each distinct gold id retrieved, so when there are as many marks as
	// distinct gold ids, the highest is the rank needed.
	distinctGold := 0
	for i, id := range gold {
		dup := false
		for j := 0; j < i; j++ {
			if goldKeys[j] == goldKeys[i] && gold[j] == id {
				dup = true
				break
			}
		}
		if !dup {
			distinctGold++
		}
	}
	need := -1
	switch {
	case distinctGold == 0:
	case bits.OnesCount64(hit) == distinctGold:
		need = 63 - bits.LeadingZeros64(hit)
	default:
		need = len(ids)
	}
	for i, k := range ks {
		n := len(TopK(ids, k))
		upto := uint64(1)<<n - 1
		inter := bits.OnesCount64(hit & upto)
		if need < n {
			o.RecallStrict |= 1 << i
		}
		p := 0.0
		if n > 0 {
			p = float64(inter) / float64(bits.OnesCount64(first&upto))
		}
		o.PrecisionAtK = append(o.PrecisionAtK, p)
		if distinctGold > 0 {
			o.RecallAtK = append(o.RecallAtK, float64(inter)/float64(distinctGold))
			o.HasRecallAtK = true
		}
	}
	rankingOfMasks(first, hit, distinctGold, ks, o)
	return true
}

// idKey packs an id's length and up to 16 of its bytes (the first and last
// 8, or 4 for ids of 4 to 7 bytes) into a word: equal ids have equal keys,
// and distinct ones almost never do.
func idKey(s string) uint64 {
	n := len(s)
	switch {
	case n >= 8:
		return binary.LittleEndian.Uint64([]byte(s[:8])) ^ bits.RotateLeft64(binary.LittleEndian.Uint64([]byte(s[n-8:])), 29) ^ uint64(n)*0x9E3779B97F4A7C15
	case n >= 4:
		// Two loads that overlap cover every byte.
		return uint64(binary.LittleEndian.Uint32([]byte(s[:4]))) | uint64(binary.LittleEndian.Uint32([]byte(s[n-4:])))<<32 ^ uint64(n)*0x9E3779B97F4A7C15
	}
	var k uint64
	for i := 0; i < n; i++ {
		k |= uint64(s[i]) << (8 * i)
	}
	return k ^ uint64(n)<<59
}
