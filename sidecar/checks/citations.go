package checks

import "github.com/shadoweval/shadoweval/window"

func init() {
	evaluations = append(evaluations, citationHitEvaluation)
	explanations["precision"] = precisionMiss
}

// citationHitEvaluation: pass when the citations hit the gold set among
// the retrieved ids (H).
func citationHitEvaluation(o *window.Observation) (Evaluation, bool) {
	return passFail("citation_hit", o.Hit), o.HasAnswer
}

// precisionMiss says why a shipped answer does not count for precision.
func precisionMiss(o *window.Observation) string {
	switch {
	case !o.Answerable:
		return "the gold item is not answerable"
	case !o.Contained && !o.Hit:
		return "no gold substring in the claim and no gold citation"
	case !o.Contained:
		return "no gold substring in the claim"
	case !o.Hit:
		return "the citations miss the gold set or the retrieved ids"
	}
	return ""
}

// Citations is answer_json.citations as sent. The reference reads it as
// `aj.get("citations") or []`, so an absent or falsy value (null, false, 0,
// "", {}) arrives here as an empty list; a truthy value that is not a JSON
// array sets NotList.
type Citations struct {
	IDs     []string
	NotList bool // truthy but not an array: H is false
}

// CitationHit is the reference citation_hit: the citations are a list, all
// of them are retrieved ids, and they share an id with gold; with no gold
// citations only an empty citation list hits.
func CitationHit(c Citations, gold, retrieved []string) bool {
	if c.NotList {
		return false
	}
	if !allIn(c.IDs, retrieved) {
		return false
	}
	if len(gold) == 0 {
		return len(c.IDs) == 0
	}
	return anyIn(c.IDs, gold)
}
