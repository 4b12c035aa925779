package checks

import "slices"

// smallSet is the list length up to which a linear scan beats building a
// map; retrieval lists are short, so the checks normally allocate nothing.
const smallSet = 32

// idSet returns the distinct ids of ids.
func idSet(ids []string) map[string]struct{} {
	m := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		m[id] = struct{}{}
	}
	return m
}

// allIn reports whether every id of ids is in set (true for no ids).
func allIn(ids, set []string) bool {
	if len(set) > smallSet && len(ids) > 1 {
		m := idSet(set)
		for _, id := range ids {
			if _, ok := m[id]; !ok {
				return false
			}
		}
		return true
	}
	for _, id := range ids {
		if !slices.Contains(set, id) {
			return false
		}
	}
	return true
}

// anyIn reports whether some id of ids is in set.
func anyIn(ids, set []string) bool {
	if len(set) > smallSet && len(ids) > 1 {
		m := idSet(set)
		for _, id := range ids {
			if _, ok := m[id]; ok {
				return true
			}
		}
		return false
	}
	for _, id := range ids {
		if slices.Contains(set, id) {
			return true
		}
	}
	return false
}

// distinctCount is |set(ids)|.
func distinctCount(ids []string) int {
	if len(ids) > smallSet {
		return len(idSet(ids))
	}
	n := 0
	for i, id := range ids {
		if !slices.Contains(ids[:i], id) {
			n++
		}
	}
	return n
}

// intersectCount is |set(a) ∩ set(b)|.
func intersectCount(a, b []string) int {
	if len(a) > smallSet || len(b) > smallSet {
		return countIn(idSet(a), idSet(b))
	}
	n := 0
	for i, id := range a {
		if !slices.Contains(a[:i], id) && slices.Contains(b, id) {
			n++
		}
	}
	return n
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
