package checks

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
