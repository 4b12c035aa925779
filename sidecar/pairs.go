package sidecar

import (
	"time"

	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/window"
)

// pairer holds the first judgement of each (arm, request_id or qid) until
// the other agent's arrives, within ttl and at most max pending; the caller
// holds App.joinMu.
type pairer struct {
	w *stream.Waitlist[pairKey, stream.Judgement]
}

type pairKey struct{ arm, id string }

func newPairer(ttl time.Duration, max int) *pairer {
	return &pairer{w: stream.NewWaitlist[pairKey, stream.Judgement](ttl, max)}
}

func (p *pairer) len() int { return p.w.Len() }

// offer returns the completed pair (scholar, auditor) when j meets its
// partner; replaced is set when j replaced an earlier judgement of the same
// agent, evicted lists the arms of halves dropped for room.
func (p *pairer) offer(key pairKey, j stream.Judgement, now time.Time) (scholar, auditor *stream.Judgement, replaced bool, evicted []string) {
	if first, _, ok := p.w.Get(key); ok && first.Agent != j.Agent {
		p.w.Take(key)
		if j.Agent == stream.AgentScholar {
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

// handleJudgement pairs Scholar and Auditor judgements and applies each
// pair to the agreement metrics of its arm.
func (a *App) handleJudgement(m *stream.Message, subjectArm string) {
	j, err := stream.DecodeJudgement(m.Data)
	if err != nil {
		a.reject(m, subjectArm, decodeReason(err), err.Error())
		return
	}
	if len(j.RetrievedIDs) > a.cfg.Limits.MaxTopK {
		a.reject(m, subjectArm, ReasonTooManyItems, "more than "+itoa(a.cfg.Limits.MaxTopK)+" ranked items")
		return
	}
	arm := subjectArm
	if j.Arm != "" {
		arm = a.arms.get(j.Arm)
	}
	if a.duplicate(m, arm, "", m.Received) {
		return
	}
	id := j.RequestID
	if id == "" {
		id = j.QID
	}
	a.joinMu.Lock()
	scholar, auditor, replaced, evicted := a.pairs.offer(pairKey{arm, id}, j, m.Received)
	a.joinMu.Unlock()
	for _, evictedArm := range evicted {
		a.countAt(m, stream.KindJudgement, evictedArm, window.JoinTimeout, m.Received)
	}
	switch {
	case replaced:
		a.countAt(m, stream.KindJudgement, arm, window.Duplicate, m.Received)
	case scholar != nil:
		typ := ""
		if g, ok := a.gold.Lookup(j.QID); ok {
			typ = g.Type
		}
		p := &window.PairObservation{Arm: arm, Type: typ, Time: m.Received, Scholar: scholar.Label, Auditor: auditor.Label}
		err := a.win.AddPair(p, m.Received)
		switch {
		case err == nil:
			a.observeAnalysesPair(p)
			a.countAt(m, stream.KindJudgement, arm, window.Scored, m.Received)
			a.countAt(m, stream.KindJudgement, arm, window.Scored, m.Received)
		case err == window.ErrLate:
			a.countAt(m, stream.KindJudgement, arm, window.Late, m.Received)
		default:
			a.reject(m, arm, ReasonBadObservation, err.Error())
		}
	}
}
