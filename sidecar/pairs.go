package sidecar

import (
	"container/list"
	"time"

	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/window"
)

// pairer holds the first judgement of each (arm, request_id or qid) until
// the other agent's arrives, within ttl and at most max pending; the caller
// holds App.joinMu.
type pairer struct {
	ttl     time.Duration
	max     int
	pending map[pairKey]*list.Element
	order   *list.List // of *pendingJudgement, oldest first
}

type pairKey struct{ arm, id string }

type pendingJudgement struct {
	key   pairKey
	arm   string
	j     stream.Judgement
	since time.Time
}

func newPairer(ttl time.Duration, max int) *pairer {
	return &pairer{ttl: ttl, max: max, pending: make(map[pairKey]*list.Element), order: list.New()}
}

func (p *pairer) len() int { return len(p.pending) }

// offer returns the completed pair (scholar, auditor) when j meets its
// partner; replaced is set when j replaced an earlier judgement of the same
// agent, evicted lists halves dropped for room.
func (p *pairer) offer(key pairKey, j stream.Judgement, now time.Time) (scholar, auditor *stream.Judgement, replaced bool, evicted []pendingJudgement) {
	if el, ok := p.pending[key]; ok {
		first := el.Value.(*pendingJudgement)
		if first.j.Agent == j.Agent {
			first.j, first.since = j, now
			p.order.MoveToBack(el)
			return nil, nil, true, nil
		}
		p.order.Remove(el)
		delete(p.pending, key)
		if j.Agent == stream.AgentScholar {
			return &j, &first.j, false, nil
		}
		return &first.j, &j, false, nil
	}
	for len(p.pending) >= p.max {
		oldest := p.order.Front()
		pj := p.order.Remove(oldest).(*pendingJudgement)
		delete(p.pending, pj.key)
		evicted = append(evicted, *pj)
	}
	p.pending[key] = p.order.PushBack(&pendingJudgement{key: key, arm: key.arm, j: j, since: now})
	return nil, nil, false, evicted
}

// expire removes the halves older than ttl.
func (p *pairer) expire(now time.Time) []pendingJudgement {
	var gone []pendingJudgement
	for el := p.order.Front(); el != nil; el = p.order.Front() {
		pj := el.Value.(*pendingJudgement)
		if now.Sub(pj.since) <= p.ttl {
			break
		}
		p.order.Remove(el)
		delete(p.pending, pj.key)
		gone = append(gone, *pj)
	}
	return gone
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
	for _, e := range evicted {
		a.countAt(m, stream.KindJudgement, e.arm, window.JoinTimeout, m.Received)
	}
	switch {
	case replaced:
		a.countAt(m, stream.KindJudgement, arm, window.Duplicate, m.Received)
	case scholar != nil:
		typ := ""
		if g, ok := a.gold.Lookup(j.QID); ok {
			typ = g.Type
		}
		err := a.win.AddPair(&window.PairObservation{Arm: arm, Type: typ, Time: m.Received, Scholar: scholar.Label, Auditor: auditor.Label}, m.Received)
		switch {
		case err == nil:
			a.countAt(m, stream.KindJudgement, arm, window.Scored, m.Received)
			a.countAt(m, stream.KindJudgement, arm, window.Scored, m.Received)
		case err == window.ErrLate:
			a.countAt(m, stream.KindJudgement, arm, window.Late, m.Received)
		default:
			a.reject(m, arm, ReasonBadObservation, err.Error())
		}
	}
}
