package checks

import (
	"strings"

	"github.com/shadoweval/shadoweval/window"
)

// UnderSection reports whether section is anchor or lies under it on dot
// paths, component-wise: S.4.2.1 is under S.4.2, S.4.20 is not. An empty
// section or anchor is under nothing, so a missing anchor never matches.
func UnderSection(section, anchor string) bool {
	if section == "" || anchor == "" {
		return false
	}
	return section == anchor || strings.HasPrefix(section, anchor+".")
}

// Covered reports whether the answer cites an id in gold, or an item whose
// section (sectionOf, usually the topk item's section_id) is the anchor or
// under it. Any citation counts, not only the first. sectionOf may be nil.
func Covered(citations, gold []string, anchor string, sectionOf func(id string) (string, bool)) bool {
	g := idSet(gold)
	for _, id := range citations {
		if _, ok := g[id]; ok {
			return true
		}
		if sectionOf == nil {
			continue
		}
		if sec, ok := sectionOf(id); ok && UnderSection(sec, anchor) {
			return true
		}
	}
	return false
}

func init() {
	answerChecks = append(answerChecks, citationAccuracy)
	evaluations = append(evaluations, anchorEvaluation)
}

// anchorEvaluation: the tree distance from the first citation's section to
// the gold anchor_section, when there are both.
func anchorEvaluation(o *window.Observation) (Evaluation, bool) {
	return Evaluation{Name: "anchor_proximity", Score: float64(o.AnchorDistance),
		Explanation: "tree distance from the first citation's section to anchor_section"}, o.HasAnswer && o.HasAnchorDistance
}

// citationAccuracy counts an answer for citation_accuracy: eligible when
// its gold item has relevant_offsets, accurate when its first citation's
// offsets (citation_offsets, else its topk item's) are within the
// tolerance of the gold offsets (CitationAccurate).
func citationAccuracy(a *answer, o *window.Observation) {
	g := &a.gold.Gold
	if len(g.RelevantOffsets) == 0 {
		return
	}
	o.Counters.Set(window.CountCitationAccEligible)
	off, haveOff := a.e.Answer.CitationOffsets[a.first]
	if !haveOff {
		for i := range a.e.TopK {
			if a.e.TopK[i].ID == a.first && a.e.TopK[i].Offsets != nil {
				off, haveOff = *a.e.TopK[i].Offsets, true
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

// AnchorDistance is the tree distance between two dot paths:
// depth(a) + depth(b) − 2·depth(common prefix), where depth counts
// dot-separated components and the prefix is compared component-wise
// (S.4.2 and S.4.20 share only S.4). "" is the root, depth 0, so the
// distance from "" is the other path's depth; callers that want to skip
// runs without a section_id or anchor must do so themselves.
func AnchorDistance(a, b string) int {
	pa, pb := dotComponents(a), dotComponents(b)
	common := 0
	for common < len(pa) && common < len(pb) && pa[common] == pb[common] {
		common++
	}
	return len(pa) + len(pb) - 2*common
}

// dotComponents splits a dot path into its components; "" has none.
func dotComponents(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, ".")
}
