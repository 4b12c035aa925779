package wire

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func retrievalHalf(arm, req, qid string) TraceEvent {
	return TraceEvent{
		QID: qid, RequestID: req, Arm: arm, EventID: "r-" + req, Query: "what is x?",
		Paraphrase: -1, Seed: -1,
		TopK:         []TopKItem{{ID: "d1", SectionID: "S.1"}, {ID: "d2"}},
		DeltaS:       []float64{0.1, 0.2},
		IndexHash:    "idx1",
		HasRetrieval: true,
		TS:           t0,
		LatencyMS:    ptr(12.0),
		Answer:       Answer{Citations: []string{}},
	}
}

func answerHalf(arm, req, qid string) TraceEvent {
	return TraceEvent{
		QID: qid, RequestID: req, Arm: arm, EventID: "a-" + req,
		Paraphrase: 2, Seed: 7,
		HasAnswer:   true,
		Answer:      Answer{Claim: "x is y", Citations: []string{"d1"}},
		DeltaSCited: ptr(0.1),
		LambdaState: "→",
		TS:          t0.Add(time.Second),
		LatencyMS:   ptr(340.0),
	}
}

func wantMerged(arm, req, qid string) TraceEvent {
	r, a := retrievalHalf(arm, req, qid), answerHalf(arm, req, qid)
	m := r
	m.EventID, m.TS, m.LatencyMS, m.Paraphrase, m.Seed = a.EventID, a.TS, a.LatencyMS, a.Paraphrase, a.Seed
	m.HasAnswer, m.Answer, m.DeltaSCited, m.LambdaState = true, a.Answer, a.DeltaSCited, a.LambdaState
	return m
}

func mustOffer(t *testing.T, j *Joiner, kind Kind, e TraceEvent, now time.Time) (TraceEvent, bool, []Pending) {
	t.Helper()
	m, ok, ev, err := j.Offer(kind, e, now)
	if err != nil {
		t.Fatalf("Offer(%s %s/%s): %v", kind, e.Arm, e.RequestID, err)
	}
	return m, ok, ev
}

func TestJoinBothOrders(t *testing.T) {
	for _, retrievalFirst := range []bool{true, false} {
		j := NewJoiner(30*time.Second, 10)
		first, second := KindAnswer, KindRetrieval
		fe, se := answerHalf("canary", "r1", "q1"), retrievalHalf("canary", "r1", "q1")
		if retrievalFirst {
			first, second, fe, se = second, first, se, fe
		}
		if _, ok, ev := mustOffer(t, j, first, fe, t0); ok || ev != nil || j.Len() != 1 {
			t.Fatalf("first half: joined=%v evicted=%v len=%d", ok, ev, j.Len())
		}
		m, ok, ev := mustOffer(t, j, second, se, t0.Add(time.Second))
		if !ok || ev != nil {
			t.Fatalf("second half: joined=%v evicted=%v", ok, ev)
		}
		if want := wantMerged("canary", "r1", "q1"); !reflect.DeepEqual(m, want) {
			t.Fatalf("retrievalFirst=%v merged\n got %+v\nwant %+v", retrievalFirst, m, want)
		}
		if j.Len() != 0 {
			t.Fatalf("len %d after join", j.Len())
		}
		if _, ok := j.NextExpiry(); ok {
			t.Fatal("NextExpiry with nothing pending")
		}
	}
}

func TestJoinKeyIncludesArm(t *testing.T) {
	j := NewJoiner(time.Minute, 10)
	mustOffer(t, j, KindRetrieval, retrievalHalf("live", "r1", "q1"), t0)
	if _, ok, _ := mustOffer(t, j, KindAnswer, answerHalf("canary", "r1", "q1"), t0); ok {
		t.Fatal("joined halves of different arms")
	}
	if j.Len() != 2 {
		t.Fatalf("len %d, want 2", j.Len())
	}
}

func TestJoinReplacement(t *testing.T) {
	j := NewJoiner(10*time.Second, 10)
	old := retrievalHalf("live", "r1", "q1")
	newer := retrievalHalf("live", "r1", "q1")
	newer.EventID, newer.IndexHash = "retry", "idx2"
	mustOffer(t, j, KindRetrieval, old, t0)
	mustOffer(t, j, KindRetrieval, retrievalHalf("live", "r2", "q2"), t0.Add(time.Second))
	_, ok, ev := mustOffer(t, j, KindRetrieval, newer, t0.Add(8*time.Second))
	if ok || len(ev) != 1 || ev[0].Reason != ReasonReplaced || ev[0].Event.EventID != old.EventID || !ev[0].Since.Equal(t0) || ev[0].Kind != KindRetrieval {
		t.Fatalf("replacement: joined=%v evicted=%+v", ok, ev)
	}
	if j.Len() != 2 {
		t.Fatalf("len %d, want 2", j.Len())
	}
	// The TTL restarted and the replaced half moved behind r2.
	if exp := j.Expire(t0.Add(12 * time.Second)); len(exp) != 1 || exp[0].Event.RequestID != "r2" {
		t.Fatalf("expire at +12s: %+v", exp)
	}
	m, ok, _ := mustOffer(t, j, KindAnswer, answerHalf("live", "r1", "q1"), t0.Add(17*time.Second))
	if !ok || m.IndexHash != "idx2" {
		t.Fatalf("join after replacement: joined=%v index_hash=%q", ok, m.IndexHash)
	}
}

func TestJoinTimeout(t *testing.T) {
	ttl := 30 * time.Second
	j := NewJoiner(ttl, 10)
	mustOffer(t, j, KindRetrieval, retrievalHalf("live", "r1", "q1"), t0)
	mustOffer(t, j, KindAnswer, answerHalf("live", "r2", "q2"), t0.Add(time.Second))
	mustOffer(t, j, KindRetrieval, retrievalHalf("live", "r3", "q3"), t0.Add(2*time.Second))
	if next, ok := j.NextExpiry(); !ok || !next.Equal(t0.Add(ttl)) {
		t.Fatalf("NextExpiry = %v %v", next, ok)
	}
	if exp := j.Expire(t0.Add(ttl)); exp != nil {
		t.Fatalf("expired at exactly the TTL: %+v", exp)
	}
	exp := j.Expire(t0.Add(ttl + time.Second + time.Nanosecond))
	if len(exp) != 2 || exp[0].Event.RequestID != "r1" || exp[1].Event.RequestID != "r2" {
		t.Fatalf("expire: %+v", exp)
	}
	for _, p := range exp {
		if p.Reason != ReasonTimeout {
			t.Fatalf("reason %q", p.Reason)
		}
	}
	if exp[0].Kind != KindRetrieval || exp[1].Kind != KindAnswer || !exp[1].Since.Equal(t0.Add(time.Second)) {
		t.Fatalf("expired halves: %+v", exp)
	}
	if j.Len() != 1 {
		t.Fatalf("len %d", j.Len())
	}
	// A partner that arrives after the TTL does not join, whether or not
	// Expire ran: the stale half times out and the new one waits.
	_, ok, ev := mustOffer(t, j, KindAnswer, answerHalf("live", "r3", "q3"), t0.Add(2*time.Second+ttl+time.Millisecond))
	if ok || len(ev) != 1 || ev[0].Reason != ReasonTimeout || ev[0].Event.RequestID != "r3" || ev[0].Kind != KindRetrieval {
		t.Fatalf("late partner: joined=%v evicted=%+v", ok, ev)
	}
	if j.Len() != 1 {
		t.Fatalf("len %d", j.Len())
	}
}

func TestJoinOverflowEvictsOldest(t *testing.T) {
	j := NewJoiner(time.Hour, 3)
	var evicted []string
	for i := range 6 {
		kind := KindRetrieval
		e := retrievalHalf("live", "r"+strconv.Itoa(i), "q")
		if i%2 == 1 {
			kind, e = KindAnswer, answerHalf("live", "r"+strconv.Itoa(i), "q")
		}
		_, _, ev := mustOffer(t, j, kind, e, t0.Add(time.Duration(i)*time.Second))
		for _, p := range ev {
			if p.Reason != ReasonOverflow {
				t.Fatalf("reason %q", p.Reason)
			}
			evicted = append(evicted, p.Event.RequestID)
		}
		if j.Len() > 3 {
			t.Fatalf("len %d > max 3", j.Len())
		}
	}
	if want := []string{"r0", "r1", "r2"}; !reflect.DeepEqual(evicted, want) {
		t.Fatalf("evicted %v, want %v", evicted, want)
	}
	// What is left still joins.
	if _, ok, _ := mustOffer(t, j, KindAnswer, answerHalf("live", "r4", "q"), t0.Add(10*time.Second)); !ok {
		t.Fatal("r4 did not join")
	}
}

func TestJoinQIDMismatch(t *testing.T) {
	j := NewJoiner(time.Minute, 10)
	mustOffer(t, j, KindRetrieval, retrievalHalf("live", "r1", "q1"), t0)
	_, ok, ev, err := j.Offer(KindAnswer, answerHalf("live", "r1", "q2"), t0.Add(time.Second))
	var mm *QIDMismatchError
	if !errors.As(err, &mm) || ok || ev != nil {
		t.Fatalf("mismatch: err=%v joined=%v evicted=%v", err, ok, ev)
	}
	if mm.PendingQID != "q1" || mm.QID != "q2" || mm.RequestID != "r1" || mm.Arm != "live" || mm.PendingKind != KindRetrieval {
		t.Fatalf("error fields: %+v", mm)
	}
	if j.Len() != 1 {
		t.Fatalf("len %d: the pending half must stay", j.Len())
	}
	if _, ok, _ := mustOffer(t, j, KindAnswer, answerHalf("live", "r1", "q1"), t0.Add(2*time.Second)); !ok {
		t.Fatal("the right partner did not join after a mismatch")
	}
}

func TestJoinRefusals(t *testing.T) {
	j := NewJoiner(time.Minute, 10)
	e := retrievalHalf("live", "", "q1")
	if _, _, _, err := j.Offer(KindRetrieval, e, t0); !errors.Is(err, ErrNoRequestID) {
		t.Fatalf("no request_id: %v", err)
	}
	for _, k := range []Kind{KindTrace, KindJudgement} {
		if _, _, _, err := j.Offer(k, retrievalHalf("live", "r", "q"), t0); err == nil {
			t.Fatalf("kind %s accepted", k)
		}
	}
	if j.Len() != 0 {
		t.Fatalf("len %d after refusals", j.Len())
	}
}

// Times that go backwards are clamped, so Expire still sees arrival order.
func TestJoinNonMonotonicTime(t *testing.T) {
	j := NewJoiner(10*time.Second, 10)
	mustOffer(t, j, KindRetrieval, retrievalHalf("live", "r1", "q"), t0.Add(5*time.Second))
	mustOffer(t, j, KindRetrieval, retrievalHalf("live", "r2", "q"), t0)
	exp := j.Expire(t0.Add(16 * time.Second))
	if len(exp) != 2 || exp[0].Event.RequestID != "r1" || !exp[1].Since.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("expire: %+v", exp)
	}
}

func TestJoinDefaults(t *testing.T) {
	j := NewJoiner(0, 0)
	if j.w.ttl != DefaultJoinTTL || j.w.max != DefaultJoinMaxPending {
		t.Fatalf("defaults: %v %d", j.w.ttl, j.w.max)
	}
}

func TestMergeFallbacks(t *testing.T) {
	// Each half carries what the other lacks.
	r := TraceEvent{QID: "q", RequestID: "r", Arm: "a", Paraphrase: -1, Seed: -1, Answer: Answer{Citations: []string{}}}
	a := TraceEvent{QID: "q", RequestID: "r", Arm: "a", Paraphrase: -1, Seed: -1,
		RetrievedIDs: []string{"d1"}, HasRetrieval: true, DeltaS: []float64{0.3}, IndexHash: "h",
		Query: "q?", Embeddings: &Embeddings{Question: []float64{1}}, HasAnswer: true, Answer: Answer{Claim: "c"}}
	m := Merge(r, a)
	if !m.HasRetrieval || m.RetrievedIDs[0] != "d1" || m.DeltaS[0] != 0.3 || m.IndexHash != "h" || m.Query != "q?" || m.Embeddings == nil {
		t.Fatalf("retrieval fallback: %+v", m)
	}
	// A retrieval half that carries an answer keeps it when the answer
	// half has none.
	r2 := r
	r2.HasAnswer, r2.Answer = true, Answer{Claim: "from retrieval"}
	a2 := TraceEvent{QID: "q", Paraphrase: -1, Seed: -1, Answer: Answer{Citations: []string{}}}
	if m := Merge(r2, a2); !m.HasAnswer || m.Answer.Claim != "from retrieval" {
		t.Fatalf("answer fallback: %+v", m)
	}
}

// Len never exceeds maxPending, whatever the traffic, and every half is
// accounted for: joined, evicted, or still pending.
func TestJoinBoundedUnderMillionOffers(t *testing.T) {
	const maxPending, offers = 1000, 1_000_000
	j := NewJoiner(50*time.Millisecond, maxPending)
	rng := rand.New(rand.NewPCG(1, 2))
	now := t0
	joined, evicted := 0, 0
	reasons := map[string]int{}
	for i := range offers {
		now = now.Add(time.Duration(rng.IntN(100)) * time.Microsecond)
		req := strconv.Itoa(rng.IntN(4000))
		kind := KindRetrieval
		if rng.IntN(2) == 0 {
			kind = KindAnswer
		}
		e := TraceEvent{QID: "q" + req, RequestID: req, Arm: "live", Paraphrase: -1, Seed: -1}
		_, ok, ev, err := j.Offer(kind, e, now)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			joined++
		}
		evicted += len(ev)
		for _, p := range ev {
			reasons[p.Reason]++
		}
		if i%1000 == 0 {
			exp := j.Expire(now)
			evicted += len(exp)
			reasons[ReasonTimeout] += len(exp)
		}
		if j.Len() > maxPending {
			t.Fatalf("offer %d: len %d > %d", i, j.Len(), maxPending)
		}
	}
	if got := 2*joined + evicted + j.Len(); got != offers {
		t.Fatalf("2·%d joined + %d evicted + %d pending = %d, want %d", joined, evicted, j.Len(), got, offers)
	}
	for _, r := range []string{ReasonTimeout, ReasonOverflow, ReasonReplaced} {
		if reasons[r] == 0 {
			t.Errorf("no %s evictions: the traffic does not exercise every path (%v)", r, reasons)
		}
	}
	if joined == 0 {
		t.Error("nothing joined")
	}
	n := 0
	for e := j.w.head; e != nil; e = e.next {
		n++
	}
	if n != j.Len() {
		t.Fatalf("list has %d entries, map %d", n, j.Len())
	}
}

func BenchmarkJoinerOffer(b *testing.B) {
	j := NewJoiner(time.Minute, 100000)
	r, a := retrievalHalf("live", "", "q"), answerHalf("live", "", "q")
	ids := make([]string, 4096)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	now := t0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now = now.Add(time.Microsecond)
		r.RequestID, a.RequestID = ids[(i/2)%4096], ids[(i/2)%4096]
		if i%2 == 0 {
			j.Offer(KindRetrieval, r, now)
		} else {
			j.Offer(KindAnswer, a, now)
		}
	}
}
