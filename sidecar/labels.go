package sidecar

import (
	"sync"
	"unicode/utf8"
)

// OtherLabel is where arms beyond the cap are folded, so a flood of made-up
// arm names cannot blow up label cardinality.
const OtherLabel = "_other"

// maxLabelLen bounds one arm name.
const maxLabelLen = 64

// labelSet admits the first max distinct names and folds the rest (and any
// name that is too long or not valid UTF-8) into OtherLabel.
type labelSet struct {
	max  int
	mu   sync.RWMutex
	seen map[string]struct{}
}

func newLabelSet(max int) *labelSet {
	return &labelSet{max: max, seen: make(map[string]struct{})}
}

func (s *labelSet) get(name string) string {
	if len(name) > maxLabelLen || !utf8.ValidString(name) {
		return OtherLabel
	}
	s.mu.RLock()
	_, ok := s.seen[name]
	s.mu.RUnlock()
	if ok {
		return name
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[name]; ok {
		return name
	}
	if len(s.seen) >= s.max {
		return OtherLabel
	}
	s.seen[name] = struct{}{}
	return name
}
