package sidecar

import (
	"cmp"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// The path of a message. The subscriptions call ingester.handle, which
// decodes the message, takes its arm and idempotency key and pairs
// judgements (this file); joins split halves and has the pure checks
// (checks.Evaluate) turn a scored event into an observation that it adds
// to the windows and the analyses (score.go). Each step returns how the
// message ended, and one call of outcome (outcome.go) records that end:
// its count by outcome and its goroutine's tally, its span, and for a
// rejection the counter, the log notice and the dead letter. The helpers
// the path calls (Joiner, pairer, GoldStore, checks, windows, analyses,
// tallies) see decoded values only; the deduper reads the message's ids.

// Reasons an event is rejected (the shadoweval_rejected_events_total label
// and the dead-letter header).
const (
	ReasonTooLarge       = "too_large"
	ReasonInvalidJSON    = "invalid_json"
	ReasonBadField       = "bad_field"
	ReasonMissingQID     = "missing_qid"
	ReasonTooManyItems   = "too_many_topk"
	ReasonBadEvent       = "bad_event"
	ReasonFuture         = "future_timestamp"
	ReasonNoRequestID    = "no_request_id"
	ReasonQIDMismatch    = "qid_mismatch"
	ReasonBadObservation = "bad_observation"
	ReasonTooDeep        = "too_deep"     // nested deeper than the JSON decoder's limit (10000)
	ReasonInvalidUTF8    = "invalid_utf8" // a string that is not UTF-8
)

// ingester owns the event path. Its parts are built by the App and passed
// in; pub is set by Start before the first message.
type ingester struct {
	limits      config.LimitsConfig
	deadletter  string // subjects.deadletter
	logPayloads bool
	log         *slog.Logger
	now         func() time.Time
	// realClock: now is time.Now, so the time a subscription stamped on
	// a message is already the app's clock.
	realClock bool
	// expiryNow is the clock halves age by (App.expiryNow).
	expiryNow func() time.Time

	arms     *labelSet
	gold     *GoldStore
	dedupe   *deduper
	evalOpt  checks.Options
	joinMu   sync.Mutex
	joiner   *wire.Joiner
	pairs    *pairer
	win      *window.Windows
	writers  []*window.Writer // one per ingest goroutine (stream.Message.Worker)
	analyses *analysis.Manager
	outcomes *window.OutcomeCounter
	metrics  *appMetrics
	tracing  *eventTracer
	notices  *notices
	pub      *stream.Publisher // nil: dead letters are counted as failures

	countHandled bool          // count handled, for AdaptProcs
	handled      atomic.Uint64 // messages handled
	obsPool      sync.Pool     // *window.Observation
	scratch      sync.Pool     // *wire.TraceScratch
}

// handle is called by the NATS subscriptions, one goroutine each.
func (in *ingester) handle(m *stream.Message) {
	if in.countHandled {
		in.handled.Add(1)
	}
	// Arrival time on the app's clock: join and pair ages are compared with
	// it in expire, and it stands in for a missing event time. In
	// JetStream mode the consumer sets it to the time the server stored
	// the message, the message's clock on every replay (jetstream.go).
	// Reading the clock costs about as much as a tenth of an event, so
	// the time the subscription stamped is kept when it is the app's clock.
	var start time.Time
	switch {
	case !m.Stored.IsZero():
		start = time.Now()
	case in.realClock && !m.Received.IsZero():
		start = m.Received
	default:
		m.Received = in.now()
		start = m.Received
		if !in.realClock {
			start = time.Now()
		}
	}
	// The event's lists live in sc, and its observation in o, until its
	// end is recorded.
	sc := in.scratch.Get().(*wire.TraceScratch)
	o := in.obsPool.Get().(*window.Observation)
	var end ending
	switch {
	case len(m.Data) > in.limits.MaxMessageBytes:
		end = in.refuse(m, ReasonTooLarge, "message of "+itoa(len(m.Data))+" bytes")
	case m.Kind == wire.KindJudgement:
		end = in.judgement(m)
	default:
		end = in.trace(m, sc, o)
	}
	end.kind, end.at, end.start = m.Kind, m.Received, start
	in.outcome(m, end)
	in.obsPool.Put(o)
	in.scratch.Put(sc)
}

// trace takes a trace, retrieval or answer event as far as the windows:
// decoded and checked, its arm admitted, not seen before, it is scored
// (score.go) or, a split half, joined to its partner first.
func (in *ingester) trace(m *stream.Message, sc *wire.TraceScratch, o *window.Observation) ending {
	// nats.go gives each message its own payload, which the event's
	// strings share.
	e, err := wire.DecodeTraceReuse(m.Data, sc)
	if err != nil {
		return in.refuse(m, decodeReason(err), err.Error())
	}
	// The subject's arm is only a fallback: it is admitted to the arm set
	// only when the event names none, so that the key tokens of keyed
	// subjects never take the places of real arms. The set's copy: e.Arm
	// shares the message's memory.
	e.Arm = in.arms.get(cmp.Or(e.Arm, stream.ArmFromSubject(m.Subject), vocab.DefaultArm))
	if len(e.TopK) > in.limits.MaxTopK || len(e.RetrievedIDs) > in.limits.MaxTopK {
		return rejected(e.Arm, ReasonTooManyItems, "more than "+itoa(in.limits.MaxTopK)+" ranked items")
	}
	sent := e.TS // zero: the event carries no ts
	if e.TS.IsZero() {
		e.TS = m.Received
	}
	switch in.dedupe.message(m, e.Arm, e.EventID, e.TS) {
	case dedupeDuplicate:
		return ended(vocab.Duplicate, e.Arm)
	case dedupeRedelivery:
		return waiting
	}
	if m.Kind == wire.KindTrace {
		return in.score(m, &e, true, sent, o)
	}
	return in.join(m, &e, sent, o)
}

// judgement pairs Scholar and Auditor judgements and applies each pair to
// the agreement metrics of its arm.
func (in *ingester) judgement(m *stream.Message) ending {
	j, err := wire.DecodeJudgement(m.Data)
	if err != nil {
		return in.refuse(m, decodeReason(err), err.Error())
	}
	arm := in.arms.get(cmp.Or(j.Arm, stream.ArmFromSubject(m.Subject), vocab.DefaultArm))
	if len(j.RetrievedIDs) > in.limits.MaxTopK {
		return rejected(arm, ReasonTooManyItems, "more than "+itoa(in.limits.MaxTopK)+" ranked items")
	}
	switch in.dedupe.message(m, arm, "", m.Received) {
	case dedupeDuplicate:
		return ended(vocab.Duplicate, arm)
	case dedupeRedelivery:
		return waiting
	}
	in.joinMu.Lock()
	scholar, auditor, replaced, evicted := in.pairs.offer(pairKey{arm, cmp.Or(j.RequestID, j.QID)}, j, m.Received)
	in.joinMu.Unlock()
	for _, evictedArm := range evicted {
		end := ended(vocab.JoinTimeout, evictedArm)
		end.kind, end.at = wire.KindJudgement, m.Received
		in.outcome(nil, end)
	}
	switch {
	case replaced:
		return ended(vocab.Duplicate, arm)
	case scholar == nil:
		return waiting
	}
	typ := ""
	if g, ok := in.gold.Lookup(j.QID); ok {
		typ = g.Type
	}
	p := &window.PairObservation{Arm: arm, Type: typ, QID: j.QID, RequestID: j.RequestID, Time: m.Received, Scholar: scholar.Label, Auditor: auditor.Label}
	switch err := in.win.AddPair(p, m.Received); {
	case err == window.ErrLate:
		return ended(vocab.Late, arm)
	case err != nil:
		return rejected(arm, ReasonBadObservation, err.Error())
	}
	if err := in.analyses.ObservePair(p, p.Time); err != nil {
		in.log.Warn("judgement pair refused by an analysis", "arm", p.Arm, "err", err)
	}
	end := ended(vocab.Scored, arm)
	end.n = 2 // this judgement and its partner
	return end
}

// refuse is the end of a message refused before its event could be read:
// its arm is the subject's.
func (in *ingester) refuse(m *stream.Message, reason, detail string) ending {
	return rejected(in.arms.get(cmp.Or(stream.ArmFromSubject(m.Subject), vocab.DefaultArm)), reason, detail)
}

// decodeReason classifies a decoder error.
func decodeReason(err error) string {
	var fe *wire.FieldError
	if errors.As(err, &fe) {
		switch {
		case strings.HasSuffix(fe.Msg, "exceeded max depth"):
			return ReasonTooDeep
		case strings.HasSuffix(fe.Msg, "invalid UTF-8"):
			return ReasonInvalidUTF8
		case strings.HasPrefix(fe.Msg, "invalid JSON"):
			return ReasonInvalidJSON
		case fe.Field == "qid":
			return ReasonMissingQID
		}
	}
	return ReasonBadField
}
