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

func init() { evaluations = append(evaluations, anchorEvaluation) }

// anchorEvaluation: the tree distance from the first citation's section to
// the gold anchor_section, when there are both.
func anchorEvaluation(o *window.Observation) (Evaluation, bool) {
	return Evaluation{Name: "anchor_proximity", Score: float64(o.AnchorDistance),
		Explanation: "tree distance from the first citation's section to anchor_section"}, o.HasAnswer && o.HasAnchorDistance
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
