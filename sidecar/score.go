package sidecar

import (
	"errors"
	"time"

	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// Joining split halves and scoring events: the part of the path from a
// decoded, admitted event to the windows and the analyses.

// join pairs split retrieval and answer halves on (arm, request_id). sent
// is the ts of this half, zero when it had none.
func (in *ingester) join(m *stream.Message, e *wire.TraceEvent, sent time.Time, o *window.Observation) ending {
	in.joinMu.Lock()
	merged, joined, evicted, err := in.joiner.Offer(m.Kind, e.Detached(), m.Received)
	in.joinMu.Unlock()
	if len(evicted) > 0 {
		in.settle(evicted, m.Received)
	}
	switch {
	case errors.Is(err, wire.ErrNoRequestID):
		if m.Kind == wire.KindRetrieval {
			// Nothing can ever join it: score what it has.
			return in.score(m, e, false, sent, o)
		}
		return rejected(e.Arm, ReasonNoRequestID, "an answer half needs request_id to be joined")
	case err != nil:
		return rejected(e.Arm, ReasonQIDMismatch, err.Error())
	case joined:
		return in.score(m, &merged, true, sent, o)
	}
	return waiting
}

// settle ends the halves the joiner gave up on, at now: a half replaced
// by a newer one of the same kind is a duplicate, every other a join
// timeout, and a retrieval half still feeds the retrieval metrics.
func (in *ingester) settle(gone []wire.Pending, now time.Time) {
	for i := range gone {
		p := &gone[i]
		end := ended(vocab.JoinTimeout, p.Event.Arm)
		if p.Reason == wire.ReasonReplaced {
			end.out = vocab.Duplicate
		}
		var o *window.Observation
		if end.out == vocab.JoinTimeout && p.Kind == wire.KindRetrieval {
			o = in.obsPool.Get().(*window.Observation)
			if s := in.score(nil, &p.Event, false, time.Time{}, o); s.applied {
				end.obs, end.applied = s.obs, true
			}
		}
		end.kind, end.at = p.Kind, now
		in.outcome(nil, end)
		if o != nil {
			in.obsPool.Put(o)
		}
	}
}

// expire times out the split halves and judgements older than their TTL
// at now.
func (in *ingester) expire(now time.Time) {
	in.joinMu.Lock()
	gone := in.joiner.Expire(now)
	pairsGone := in.pairs.expire(now)
	in.joinMu.Unlock()
	in.settle(gone, now)
	for _, arm := range pairsGone {
		end := ended(vocab.JoinTimeout, arm)
		end.kind, end.at = wire.KindJudgement, now
		in.outcome(nil, end)
	}
}

// pending is the number of split halves and judgements waiting for their
// partner.
func (in *ingester) pending() int {
	in.joinMu.Lock()
	defer in.joinMu.Unlock()
	return in.joiner.Len() + in.pairs.len()
}

// score joins an event to its gold item and applies it to the windows and
// the analyses, with o for its observation. sent is the ts the event
// carried (zero: none); the time from it to the window add is its lag. m
// is the message that delivered it, nil for a half the joiner gave up on.
func (in *ingester) score(m *stream.Message, e *wire.TraceEvent, hasAnswer bool, sent time.Time, o *window.Observation) ending {
	g, ok := in.gold.Lookup(e.QID)
	if !ok {
		return tracedEnd(vocab.Unlabeled, e, nil)
	}
	// A span may outlive the message: it keeps the gold set's copy of the
	// qid (the observation has it from the gold item too).
	e.QID = g.QID
	if err := checks.Evaluate(e, g, hasAnswer, in.evalOpt, o); err != nil {
		return rejected(e.Arm, ReasonBadEvent, err.Error())
	}
	// The message's clock; a half given up on (m nil) is applied at the
	// clock it aged by. Each ingest goroutine adds through its own Writer.
	var now time.Time
	var err error
	switch {
	case m == nil:
		now = in.expiryNow()
		err = in.win.Add(o, now)
	case m.Worker >= 0 && m.Worker < len(in.writers):
		now = m.Received
		err = in.writers[m.Worker].Add(o, now)
	default:
		now = m.Received
		err = in.win.Add(o, now)
	}
	switch {
	case errors.Is(err, window.ErrLate):
		return tracedEnd(vocab.Late, e, o)
	case errors.Is(err, window.ErrFuture):
		return rejected(e.Arm, ReasonFuture, "ts "+e.TS.Format(time.RFC3339)+" is ahead of this clock by more than window.max_lateness")
	case err != nil:
		return rejected(e.Arm, ReasonBadObservation, err.Error())
	}
	end := tracedEnd(vocab.Scored, e, o)
	end.applied = true
	if !sent.IsZero() {
		end.lag = max(0, now.Sub(sent).Seconds())
	}
	t := o.Time
	if t.IsZero() {
		t = now
	}
	// The windows accepted o, and they check it as the analyses do.
	if err := in.analyses.ObserveAccepted(o, t); err != nil {
		in.log.Warn("observation refused by an analysis", "arm", o.Arm, "err", err)
	}
	return end
}
