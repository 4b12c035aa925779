package sidecar

import (
	"time"

	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/wire"
)

// pairer holds the first judgement of each (arm, request_id or qid) until
// the other agent's arrives, within ttl and at most max pending; the caller
// holds App.joinMu.
type pairer struct {
	w *wire.Waitlist[pairKey, wire.Judgement]
}

type pairKey struct{ arm, id string }

func newPairer(ttl time.Duration, max int) *pairer {
	return &pairer{w: wire.NewWaitlist[pairKey, wire.Judgement](ttl, max)}
}

func (p *pairer) len() int { return p.w.Len() }

// offer returns the completed pair (scholar, auditor) when j meets its
// partner; replaced is set when j replaced an earlier judgement of the same
// agent, evicted lists the arms of halves dropped for room.
func (p *pairer) offer(key pairKey, j wire.Judgement, now time.Time) (scholar, auditor *wire.Judgement, replaced bool, evicted []string) {
	if first, _, ok := p.w.Get(key); ok && first.Agent != j.Agent {
		p.w.Take(key)
		if j.Agent == vocab.AgentScholar {
			return &j, &first, false, nil
		}
		return &first, &j, false, nil
	}
	prev, overflow := p.w.Put(key, j, now)
	for _, g := range overflow {
		evicted = append(evicted, g.Key.arm)
	}
	return nil, nil, prev != nil, evicted
}

// expire removes the halves older than ttl and returns their arms.
func (p *pairer) expire(now time.Time) []string {
	var arms []string
	for _, g := range p.w.Expire(now) {
		arms = append(arms, g.Key.arm)
	}
	return arms
}
