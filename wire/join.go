package wire

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of SPEC §8 join: {ttl: 30s, max_pending: 100000}.
const (
	DefaultJoinTTL        = 30 * time.Second
	DefaultJoinMaxPending = 100000
)

// Reasons a pending half leaves the Joiner without its partner.
const (
	// ReasonTimeout: no partner within the TTL (SPEC §2.3 join_timeout).
	ReasonTimeout = "timeout"
	// ReasonOverflow: evicted, oldest first, to keep max_pending.
	ReasonOverflow = "overflow"
	// ReasonReplaced: a newer half of the same kind arrived for the same
	// (arm, request_id); the newer one is kept. The caller decides whether
	// that is a duplicate or a retry; it is not a join timeout.
	ReasonReplaced = "replaced"
)

// ErrNoRequestID is returned by Offer for an event without request_id: it
// cannot be joined. Callers score a retrieval half without request_id as a
// retrieval-only event and reject an answer half without one.
var ErrNoRequestID = errors.New("split event has no request_id: cannot join")

// QIDMismatchError is returned by Offer when the two halves of one
// (arm, request_id) name different qids. The offered half is refused and
// the pending half stays, to meet its right partner or time out.
type QIDMismatchError struct {
	Arm, RequestID string
	PendingKind    Kind
	PendingQID     string
	QID            string
}

func (e *QIDMismatchError) Error() string {
	return fmt.Sprintf("split event arm %q request_id %q: qid %q does not match the pending %s half's qid %q",
		e.Arm, e.RequestID, e.QID, e.PendingKind, e.PendingQID)
}

// Pending is a half that left the Joiner unjoined.
type Pending struct {
	Kind   Kind // KindRetrieval or KindAnswer
	Event  TraceEvent
	Since  time.Time // when it was offered
	Reason string    // ReasonTimeout, ReasonOverflow or ReasonReplaced
}

type joinKey struct{ arm, requestID string }

type joinHalf struct {
	kind  Kind
	event TraceEvent
}

// Joiner pairs the retrieval and answer halves of split events (SPEC §2.3)
// on (arm, request_id). It holds at most maxPending halves in arrival
// order; every operation is O(1) per half it touches. It has no goroutines
// or timers: the caller passes the time to Offer and calls Expire. It is
// not safe for concurrent use.
//
// Times passed in should come from one monotonic clock (arrival time, not
// event time); a time earlier than the newest pending half's is taken as
// that half's time, so arrival order is also age order.
type Joiner struct {
	w *Waitlist[joinKey, joinHalf]
}

// NewJoiner makes a Joiner; ttl <= 0 means DefaultJoinTTL and
// maxPending <= 0 means DefaultJoinMaxPending.
func NewJoiner(ttl time.Duration, maxPending int) *Joiner {
	if ttl <= 0 {
		ttl = DefaultJoinTTL
	}
	if maxPending <= 0 {
		maxPending = DefaultJoinMaxPending
	}
	return &Joiner{w: NewWaitlist[joinKey, joinHalf](ttl, maxPending)}
}

// Len is the number of pending halves.
func (j *Joiner) Len() int { return j.w.Len() }

// Offer adds one half; kind is KindRetrieval or KindAnswer and e.Arm must
// already be resolved (event, subject or default). When the other half of
// (e.Arm, e.RequestID) is pending, it returns the merged event and
// joined = true, and the key is forgotten. Otherwise e waits, and evicted
// lists the halves that left because of it:
//   - a pending half of the same kind and key is replaced by e (newest
//     wins, its TTL starts again) and returned with ReasonReplaced;
//   - a pending partner already older than the TTL is returned with
//     ReasonTimeout instead of being joined, so the result does not depend
//     on how often Expire runs;
//   - when more than maxPending halves wait, the oldest is returned with
//     ReasonOverflow.
//
// Errors: ErrNoRequestID, *QIDMismatchError (e is not stored, the pending
// half stays), or a bad kind. On error nothing changes.
func (j *Joiner) Offer(kind Kind, e TraceEvent, now time.Time) (merged TraceEvent, joined bool, evicted []Pending, err error) {
	if kind != KindRetrieval && kind != KindAnswer {
		return TraceEvent{}, false, nil, fmt.Errorf("join: kind %s is not a split-event half", kind)
	}
	if e.RequestID == "" {
		return TraceEvent{}, false, nil, ErrNoRequestID
	}
	now = j.w.Clock(now)
	key := joinKey{e.Arm, e.RequestID}
	if other, since, ok := j.w.Get(key); ok {
		switch {
		case j.w.Expired(since, now):
			j.w.Take(key)
			evicted = append(evicted, Pending{Kind: other.kind, Event: other.event, Since: since, Reason: ReasonTimeout})
		case other.kind == kind:
			// Put below replaces it.
		case other.event.QID != e.QID:
			return TraceEvent{}, false, nil, &QIDMismatchError{
				Arm: e.Arm, RequestID: e.RequestID,
				PendingKind: other.kind, PendingQID: other.event.QID, QID: e.QID,
			}
		default:
			j.w.Take(key)
			if kind == KindRetrieval {
				return Merge(e, other.event), true, nil, nil
			}
			return Merge(other.event, e), true, nil, nil
		}
	}
	replaced, overflow := j.w.Put(key, joinHalf{kind, e}, now)
	if replaced != nil {
		evicted = append(evicted, pending(*replaced, ReasonReplaced))
	}
	for _, g := range overflow {
		evicted = append(evicted, pending(g, ReasonOverflow))
	}
	return TraceEvent{}, false, evicted, nil
}

func pending(g Gone[joinKey, joinHalf], reason string) Pending {
	return Pending{Kind: g.Value.kind, Event: g.Value.event, Since: g.Since, Reason: reason}
}

// Expire removes and returns, oldest first, the halves that have waited
// longer than the TTL at now.
func (j *Joiner) Expire(now time.Time) []Pending {
	var out []Pending
	for _, g := range j.w.Expire(now) {
		out = append(out, pending(g, ReasonTimeout))
	}
	return out
}

// NextExpiry is when the oldest pending half times out (Expire at any later
// time returns it); ok is false when nothing is pending.
func (j *Joiner) NextExpiry() (t time.Time, ok bool) { return j.w.NextExpiry() }

// Merge joins a retrieval half and an answer half of one request. Retrieval
// fields (retrieved_ids, topk, delta_s, embeddings, index_hash) come from
// the retrieval half, answer fields (answer_json, delta_s_cited,
// lambda_state) from the answer half, each falling back to the other half
// when its own half did not send them. Shared fields (event_id, ts,
// latency_ms, paraphrase, seed) prefer the answer half, which completes the
// request; the query text prefers the retrieval half. qid, arm and
// request_id are those of the retrieval half (Offer has checked they
// match).
func Merge(ret, ans TraceEvent) TraceEvent {
	m := ret
	if !ret.HasRetrieval && ans.HasRetrieval {
		m.RetrievedIDs, m.TopK, m.HasRetrieval = ans.RetrievedIDs, ans.TopK, true
	}
	if m.DeltaS == nil {
		m.DeltaS = ans.DeltaS
	}
	if m.Embeddings == nil {
		m.Embeddings = ans.Embeddings
	}
	if m.IndexHash == "" {
		m.IndexHash = ans.IndexHash
	}
	if ans.HasAnswer || !ret.HasAnswer {
		m.HasAnswer, m.Answer = ans.HasAnswer, ans.Answer
	}
	if ans.DeltaSCited != nil {
		m.DeltaSCited = ans.DeltaSCited
	}
	if ans.LambdaState != "" {
		m.LambdaState = ans.LambdaState
	}
	if ans.EventID != "" {
		m.EventID = ans.EventID
	}
	if !ans.TS.IsZero() {
		m.TS = ans.TS
	}
	if ans.LatencyMS != nil {
		m.LatencyMS = ans.LatencyMS
	}
	if ans.Paraphrase != -1 {
		m.Paraphrase = ans.Paraphrase
	}
	if ans.Seed != -1 {
		m.Seed = ans.Seed
	}
	if m.Query == "" {
		m.Query = ans.Query
	}
	return m
}
