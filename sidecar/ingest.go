package sidecar

import (
	"cmp"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/shadoweval/shadoweval/wire"

	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
)

// The path of a message: handle decodes it, takes its arm and idempotency
// key, joins or pairs its halves, and has the pure checks
// (checks.Evaluate) turn a scored event into an observation that it adds
// to the windows and counts with one outcome. Everything that needs the
// message (its clock, its worker's tally, its span, its dead letter) is
// done here; the helpers it calls (deduper, Joiner, pairer, GoldStore,
// windows, tallies) never see it.

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

// handle is called by the NATS subscriptions, one goroutine per kind.
func (a *App) handle(m *stream.Message) {
	if a.adaptProcs {
		a.handled.Add(1)
	}
	// Arrival time on the app's clock: join and pair ages are compared with
	// a.now() in expire, and it stands in for a missing event time.
	// In JetStream mode the consumer sets it to the time the server stored
	// the message, the message's clock on every replay (jetstream.go).
	// Reading the clock costs about as much as a tenth of an event, so
	// the time the subscription stamped is kept when it is the app's clock.
	var start time.Time
	switch {
	case !m.Stored.IsZero():
		start = time.Now()
	case a.realClock && !m.Received.IsZero():
		start = m.Received
	default:
		m.Received = a.now()
		start = m.Received
		if !a.realClock {
			start = time.Now()
		}
	}
	// The subject's arm is only a fallback: it is admitted to the arm set
	// only when the event names none (or cannot be read), so that the key
	// tokens of keyed subjects never take the places of real arms.
	subjectArm := cmp.Or(stream.ArmFromSubject(m.Subject), vocab.DefaultArm)
	if len(m.Data) > a.cfg.Limits.MaxMessageBytes {
		a.reject(m, a.arms.get(subjectArm), ReasonTooLarge, "message of "+itoa(len(m.Data))+" bytes")
		return
	}
	if m.Kind == wire.KindJudgement {
		a.handleJudgement(m, subjectArm)
	} else {
		a.handleTrace(m, subjectArm)
	}
	a.tallyOf(m).processed(m.Kind, time.Since(start).Seconds())
}

// addObservation adds o to the windows through the Writer of the goroutine
// that delivered m (nil, or a message of no ingest goroutine: directly).
func (a *App) addObservation(m *stream.Message, o *window.Observation, now time.Time) error {
	if m == nil || m.Worker < 0 || m.Worker >= len(a.writers) {
		return a.win.Add(o, now)
	}
	return a.writers[m.Worker].Add(o, now)
}

// tallyOf is the metric tally of the goroutine that delivered m (nil: the
// shared one).
func (a *App) tallyOf(m *stream.Message) *tally {
	if m == nil {
		return a.metrics.tally(-1)
	}
	return a.metrics.tally(m.Worker)
}

func (a *App) handleTrace(m *stream.Message, subjectArm string) {
	// nats.go gives each message its own payload, which the event's
	// strings share; its lists live in sc until the handler is done.
	sc := a.scratch.Get().(*wire.TraceScratch)
	defer a.scratch.Put(sc)
	e, err := wire.DecodeTraceReuse(m.Data, sc)
	if err != nil {
		a.reject(m, a.arms.get(subjectArm), decodeReason(err), err.Error())
		return
	}
	// The set's copy: e.Arm shares the message's memory
	// (DecodeTraceShared).
	e.Arm = a.arms.get(cmp.Or(e.Arm, subjectArm))
	if len(e.TopK) > a.cfg.Limits.MaxTopK || len(e.RetrievedIDs) > a.cfg.Limits.MaxTopK {
		a.reject(m, e.Arm, ReasonTooManyItems, "more than "+itoa(a.cfg.Limits.MaxTopK)+" ranked items")
		return
	}
	sent := e.TS // zero: the event carries no ts
	if e.TS.IsZero() {
		e.TS = m.Received
	}
	if a.duplicate(m, e.Arm, e.EventID, e.TS) {
		return
	}
	switch m.Kind {
	case wire.KindTrace:
		a.score(m, &e, true, sent)
	case wire.KindRetrieval, wire.KindAnswer:
		a.join(m, &e, sent)
	}
}

// handleJudgement pairs Scholar and Auditor judgements and applies each
// pair to the agreement metrics of its arm.
func (a *App) handleJudgement(m *stream.Message, subjectArm string) {
	j, err := wire.DecodeJudgement(m.Data)
	if err != nil {
		a.reject(m, a.arms.get(subjectArm), decodeReason(err), err.Error())
		return
	}
	arm := a.arms.get(cmp.Or(j.Arm, subjectArm))
	if len(j.RetrievedIDs) > a.cfg.Limits.MaxTopK {
		a.reject(m, arm, ReasonTooManyItems, "more than "+itoa(a.cfg.Limits.MaxTopK)+" ranked items")
		return
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
		a.countAt(m, wire.KindJudgement, evictedArm, vocab.JoinTimeout, m.Received)
	}
	switch {
	case replaced:
		a.countAt(m, wire.KindJudgement, arm, vocab.Duplicate, m.Received)
	case scholar != nil:
		typ := ""
		if g, ok := a.gold.Lookup(j.QID); ok {
			typ = g.Type
		}
		p := &window.PairObservation{Arm: arm, Type: typ, QID: j.QID, RequestID: j.RequestID, Time: m.Received, Scholar: scholar.Label, Auditor: auditor.Label}
		err := a.win.AddPair(p, m.Received)
		switch {
		case err == nil:
			a.observeAnalysesPair(p)
			a.countAt(m, wire.KindJudgement, arm, vocab.Scored, m.Received)
			a.countAt(m, wire.KindJudgement, arm, vocab.Scored, m.Received)
		case err == window.ErrLate:
			a.countAt(m, wire.KindJudgement, arm, vocab.Late, m.Received)
		default:
			a.reject(m, arm, ReasonBadObservation, err.Error())
		}
	}
}

// duplicate applies the idempotency rule to a decoded, valid message of
// arm with event time t: true when it must go no further, because it was
// counted as a duplicate or is a redelivery of a message already applied.
func (a *App) duplicate(m *stream.Message, arm, eventID string, t time.Time) bool {
	id := eventID
	if id == "" && m.Header != nil {
		id = stream.MsgID(m.Header)
	}
	if id == "" && m.Seq == 0 {
		return false // core NATS, no id: nothing to go by
	}
	switch a.dedupe.check(m.Kind, arm, id, m.Seq, t, m.Received) {
	case dedupeDuplicate:
		a.countAt(m, m.Kind, arm, vocab.Duplicate, m.Received)
		return true
	case dedupeRedelivery:
		return true
	}
	return false
}

// join pairs split retrieval and answer halves on (arm, request_id). sent
// is the ts of this half, zero when it had none.
func (a *App) join(m *stream.Message, e *wire.TraceEvent, sent time.Time) {
	a.joinMu.Lock()
	merged, joined, evicted, err := a.joiner.Offer(m.Kind, e.Detached(), m.Received)
	a.joinMu.Unlock()
	a.settle(evicted, m.Received)
	switch {
	case errors.Is(err, wire.ErrNoRequestID):
		if m.Kind == wire.KindRetrieval {
			// Nothing can ever join it: score what it has.
			a.score(m, e, false, sent)
			return
		}
		a.reject(m, e.Arm, ReasonNoRequestID, "an answer half needs request_id to be joined")
	case err != nil:
		a.reject(m, e.Arm, ReasonQIDMismatch, err.Error())
	case joined:
		a.score(m, &merged, true, sent)
	}
}

// settle accounts for halves the joiner gave up on: a retrieval half is
// still scored for retrieval metrics, every half counts as a join timeout,
// and a half replaced by a newer one of the same kind is a duplicate; now
// is the clock they are counted at.
func (a *App) settle(gone []wire.Pending, now time.Time) {
	for i := range gone {
		p := &gone[i]
		if p.Reason == wire.ReasonReplaced {
			a.countAt(nil, p.Kind, p.Event.Arm, vocab.Duplicate, now)
			continue
		}
		a.countAt(nil, p.Kind, p.Event.Arm, vocab.JoinTimeout, now)
		if p.Kind == wire.KindRetrieval {
			// Its outcome is the join timeout just counted; it still
			// feeds the retrieval metrics.
			a.scoreEvent(p.Kind, &p.Event, false, time.Time{}, false, nil)
		}
	}
}

func (a *App) expire(now time.Time) {
	a.joinMu.Lock()
	gone := a.joiner.Expire(now)
	pairsGone := a.pairs.expire(now)
	a.joinMu.Unlock()
	a.settle(gone, now)
	for _, arm := range pairsGone {
		a.countAt(nil, wire.KindJudgement, arm, vocab.JoinTimeout, now)
	}
}

// score joins an event to its gold item and applies it to the windows.
func (a *App) score(m *stream.Message, e *wire.TraceEvent, hasAnswer bool, sent time.Time) {
	reason, detail := a.scoreEvent(m.Kind, e, hasAnswer, sent, true, m)
	if reason != "" {
		a.reject(m, e.Arm, reason, detail)
	}
}

// scoreEvent returns a rejection reason when the event cannot be scored.
// sent is the ts the event carried (zero: none); the time from it to the
// window add is observed as the event lag.
// count is false when the event's outcome was counted already, so that
// every message has exactly one outcome. m is the message that delivered
// it, for its span (nil: none).
func (a *App) scoreEvent(kind wire.Kind, e *wire.TraceEvent, hasAnswer bool, sent time.Time, count bool, m *stream.Message) (reason, detail string) {
	g, ok := a.gold.Lookup(e.QID)
	if ok {
		// A span may outlive the message: it keeps the gold set's copy
		// of the qid (the observation has it from the gold item too).
		e.QID = g.QID
	} else {
		a.tracing.scored(m, e, nil, vocab.Unlabeled)
		if count {
			a.countAt(m, kind, e.Arm, vocab.Unlabeled, a.clockOf(m))
			if m != nil && !m.Replayed && a.notices.first("unlabeled", slog.LevelInfo, "events unlabeled") {
				a.log.Info("event unlabeled: no gold item has its qid; counted as unlabeled, not scored; more are summed up once a minute",
					"qid", e.QID, "arm", e.Arm, "subject", m.Subject, "gold_items", a.gold.Current().Len())
			}
		}
		return "", ""
	}
	o := a.obsPool.Get().(*window.Observation)
	defer a.obsPool.Put(o)
	if err := checks.Evaluate(e, g, hasAnswer, a.evalOpt, o); err != nil {
		return ReasonBadEvent, err.Error()
	}
	now := a.clockOf(m)
	switch err := a.addObservation(m, o, now); {
	case errors.Is(err, window.ErrLate):
		a.tracing.scored(m, e, o, vocab.Late)
		if count {
			a.countAt(m, kind, e.Arm, vocab.Late, now)
			if m != nil && !m.Replayed && a.notices.first("late", slog.LevelInfo, "events late") {
				a.log.Info("event late: its ts is older than the longest window, or more than window.max_lateness behind the newest event of its arm; counted as late, not scored; more are summed up once a minute",
					"qid", e.QID, "arm", e.Arm, "ts", e.TS.UTC().Format(time.RFC3339Nano), "clock", now.UTC().Format(time.RFC3339), "subject", m.Subject)
			}
		}
		return "", ""
	case errors.Is(err, window.ErrFuture):
		return ReasonFuture, "ts " + e.TS.Format(time.RFC3339) + " is ahead of this clock by more than window.max_lateness"
	case err != nil:
		return ReasonBadObservation, err.Error()
	}
	lag := -1.0
	if !sent.IsZero() {
		lag = max(0, now.Sub(sent).Seconds())
	}
	a.observeAnalyses(o, now)
	a.tallyOf(m).scored(kind, o, lag, count)
	a.tracing.scored(m, e, o, vocab.Scored)
	if count {
		a.outcomes.Count(e.Arm, vocab.Scored, now)
	}
	return "", ""
}

// countAt counts an outcome at now: the clock of the message that had it
// (m.Received; in JetStream mode the time the server stored it), or the
// clock of an expiry. m is the message being handled, whose goroutine's
// tally counts it (nil: the shared tally).
func (a *App) countAt(m *stream.Message, kind wire.Kind, arm string, o vocab.Outcome, now time.Time) {
	a.tallyOf(m).event(kind, arm, o)
	a.outcomes.Count(arm, o, now)
}

// reject counts a refused event and publishes it to the dead-letter
// subject with its reason.
func (a *App) reject(m *stream.Message, arm, reason, detail string) {
	a.tracing.rejected(m, arm, reason)
	a.countAt(m, m.Kind, arm, vocab.Rejected, m.Received)
	a.metrics.rejected.WithLabelValues(reason).Inc()
	detail = clipDetail(detail)
	if m.Replayed {
		return // dead-lettered and logged by the process that first applied it
	}
	if a.notices.first("rejected:"+reason, slog.LevelWarn, "events rejected ("+reason+")") {
		a.log.Warn("event rejected: counted in shadoweval_rejected_events_total and dead-lettered; more of this reason are summed up once a minute",
			"reason", reason, "detail", detail, "subject", m.Subject, "arm", arm, "deadletter", a.cfg.Subjects.Deadletter)
	}
	result := "success"
	if a.pub == nil || a.pub.DeadLetter(a.cfg.Subjects.Deadletter, m, reason+": "+detail) != nil {
		result = "failure"
	}
	a.metrics.deadLetters.WithLabelValues(result).Inc()
	if a.cfg.Log.Payloads {
		a.log.Debug("event rejected", "reason", reason, "detail", detail, "subject", m.Subject, "payload", string(m.Data))
	}
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
