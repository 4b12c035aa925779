package sidecar

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/shadoweval/shadoweval/vocab"
)

// maxLabelLen bounds one arm name.
const maxLabelLen = 64

// labelSet admits the first max distinct names and folds the rest (and any
// name that is too long or not valid UTF-8) into vocab.Other.
//
// Every event asks it for its arm, so the read path takes no lock: the map
// is replaced whole when a name is admitted, which happens at most max
// times.
type labelSet struct {
	max  int
	mu   sync.Mutex // serialises admissions
	seen atomic.Pointer[map[string]string]
}

func newLabelSet(max int) *labelSet {
	s := &labelSet{max: max}
	s.seen.Store(&map[string]string{})
	return s
}

// get returns the label for name: an admitted name as the set's own copy,
// which does not pin the memory name came from (a message's payload), or
// vocab.Other.
func (s *labelSet) get(name string) string {
	if v, ok := (*s.seen.Load())[name]; ok {
		return v
	}
	if len(name) > maxLabelLen || !utf8.ValidString(name) {
		return vocab.Other
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := *s.seen.Load()
	if v, ok := old[name]; ok {
		return v
	}
	if len(old) >= s.max {
		return vocab.Other
	}
	next := make(map[string]string, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	name = strings.Clone(name)
	next[name] = name
	s.seen.Store(&next)
	return name
}

// names are the admitted names.
func (s *labelSet) names() []string {
	seen := *s.seen.Load()
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	return out
}
