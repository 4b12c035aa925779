package checks

import "github.com/shadoweval/shadoweval/window"

// citation_accuracy is its registry row (window/registry.go), this check,
// which sets the row's counters in Observation.Counters, and its test:
// the shape of every per-event proportion with no Observation field.

func init() { answerChecks = append(answerChecks, citationAccuracy) }

// citationAccuracy counts an answer for citation_accuracy: eligible when
// its gold item has relevant_offsets, accurate when its first citation's
// offsets (citation_offsets, else its topk item's) are within the
// tolerance of the gold offsets (CitationAccurate).
func citationAccuracy(a answer, o *window.Observation) {
	g := &a.gold.Gold
	if len(g.RelevantOffsets) == 0 {
		return
	}
	o.Counters.Set(window.CountCitationAccEligible)
	off, haveOff := a.citationOffsets[a.first]
	if !haveOff {
		for i := range a.topK {
			if a.topK[i].ID == a.first && a.topK[i].Offsets != nil {
				off, haveOff = *a.topK[i].Offsets, true
				break
			}
		}
	}
	if CitationAccurate(a.first, off, haveOff, a.gold.citations, g.RelevantOffsets, a.opt.Tolerance) {
		o.Counters.Set(window.CountCitationAccurate)
	}
}

// CitationAccurate reports whether the first citation is a gold id and its
// offsets lie within tol bytes of that id's gold offsets at both ends.
// first is "" when the answer cites nothing; off is the caller's resolved
// offsets (citation_offsets, else the topk item) and haveOff says whether
// there were any. No offsets on either side, or a negative tol, is false.
func CitationAccurate(first string, off [2]int64, haveOff bool, gold []string, goldOffsets map[string][2]int64, tol int64) bool {
	if first == "" || !haveOff || tol < 0 {
		return false
	}
	if _, ok := idSet(gold)[first]; !ok {
		return false
	}
	g, ok := goldOffsets[first]
	if !ok {
		return false
	}
	return absDiff(off[0], g[0]) <= uint64(tol) && absDiff(off[1], g[1]) <= uint64(tol)
}

// absDiff is |a−b| without overflow for any two int64 offsets.
func absDiff(a, b int64) uint64 {
	if a >= b {
		return uint64(a) - uint64(b)
	}
	return uint64(b) - uint64(a)
}
