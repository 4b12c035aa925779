package analysis

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/window"
)

// TestHeldObservationsCountAsOnArrival: accepted observations held for a
// batch (accLock) judge, tick, save and restore exactly as observations
// counted on arrival. The reference counts each one when it comes
// (Observe); the other Manager is given the same ones through
// ObserveAccepted in a struct whose lists and strings the test scribbles
// over as soon as the call returns, as the ingester reuses its own. The
// stream has late events, request ids, qids with and without keys,
// retrieval lists and judgement pairs, and analyses start, end and are
// restored between reads, most of them while observations are held.
func TestHeldObservationsCountAsOnArrival(t *testing.T) {
	held, ref := newTestManager(nil), newTestManager(nil)
	both := []*Manager{held, ref}
	start := func(id, arm string, at time.Time) {
		t.Helper()
		for _, m := range both {
			if _, _, err := m.Start(StartRequest{ID: id, Arm: arm}, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	heldBefore := 0 // reads that found observations held
	compare := func(k int) {
		t.Helper()
		if len(held.acc.list) > 0 {
			heldBefore++
		}
		for _, id := range []string{"a", "b", "c", "s"} {
			h, okh := held.Get(id)
			r, okr := ref.Get(id)
			if okh != okr {
				t.Fatalf("step %d: analysis %s held %v, on arrival %v", k, id, okh, okr)
			}
			if !okh {
				continue
			}
			if got, want := h.Result(), r.Result(); !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d, analysis %s held:\n%+v\non arrival:\n%+v", k, id, got, want)
			}
			// Every count, those no check reads too.
			hs, err := h.Save(SaveAll)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := r.Save(SaveAll)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(hs, rs) {
				t.Fatalf("step %d, analysis %s: the checkpoints differ", k, id)
			}
		}
	}
	start("a", "canary", t0)
	start("b", "canary", t0)
	start("s", "shadow", t0)

	rng := rand.New(rand.NewPCG(11, 12))
	ks := len(ref.ks)
	// What the held Manager is given: overwritten after every call.
	var given window.Observation
	qidBuf, reqBuf, typeBuf := make([]byte, 32), make([]byte, 32), make([]byte, 32)
	prec, rec, ds, means := make([]float64, ks), make([]float64, ks), make([]float64, 8), make([]float64, window.MeansLen(ks))
	reused := func(buf []byte, s string) string {
		if s == "" {
			return ""
		}
		n := copy(buf, s)
		return unsafe.String(&buf[0], n)
	}
	scribble := func() {
		for _, b := range [][]byte{qidBuf, reqBuf, typeBuf} {
			for i := range b {
				b[i] = 'z'
			}
		}
		for _, f := range [][]float64{prec, rec, ds, means} {
			for i := range f {
				f[i] = math.NaN()
			}
		}
	}
	const steps = 9000
	for k := range steps {
		o := richObservation(rng, k, ks)
		at, arm := o.Time, o.Arm
		given = o
		given.QID, given.RequestID, given.Type = reused(qidBuf, o.QID), reused(reqBuf, o.RequestID), reused(typeBuf, o.Type)
		given.PrecisionAtK, given.RecallAtK, given.DeltaSRetrieved = prec[:copy(prec, o.PrecisionAtK)], rec[:copy(rec, o.RecallAtK)], ds[:copy(ds, o.DeltaSRetrieved)]
		if o.Means != nil {
			given.Means = means[:copy(means, o.Means)]
		}
		if err := ref.Observe(&o, o.Time); err != nil {
			t.Fatalf("step %d: %v", k, err)
		}
		if err := held.ObserveAccepted(&given, given.Time); err != nil {
			t.Fatalf("step %d: %v", k, err)
		}
		scribble()
		if k%25 == 0 {
			labels := window.JudgementLabels
			p := window.PairObservation{Arm: arm, QID: o.QID, RequestID: o.RequestID, Time: at, Scholar: labels[rng.IntN(len(labels))], Auditor: labels[rng.IntN(len(labels))]}
			for _, m := range both {
				if err := m.ObservePair(&p, at); err != nil {
					t.Fatal(err)
				}
			}
		}
		switch k {
		case 2003:
			start("c", "canary", at)
		case 5001:
			for _, m := range both {
				if _, ok := m.End("b", at); !ok {
					t.Fatal("b did not end")
				}
			}
		case 6007:
			// A checkpoint of each, restored into its own Manager.
			for _, m := range both {
				an, _ := m.Get("a")
				s, err := an.Save(SaveAll)
				if err != nil {
					t.Fatal(err)
				}
				if err := m.Restore(s); err != nil {
					t.Fatal(err)
				}
			}
		}
		if k%1500 == 1499 {
			gotChanged, gotForgotten := held.Tick(at)
			wantChanged, wantForgotten := ref.Tick(at)
			if !reflect.DeepEqual(gotChanged, wantChanged) || !reflect.DeepEqual(gotForgotten, wantForgotten) {
				t.Fatalf("step %d: tick held %+v %v, on arrival %+v %v", k, gotChanged, gotForgotten, wantChanged, wantForgotten)
			}
		}
		if k%997 == 996 || k == steps-1 {
			compare(k)
		}
	}
	an, _ := held.Get("a")
	r := an.Result()
	if c := checkOf(t, r, "precision"); c.Pairs == 0 {
		t.Fatalf("the stream made no pairs: %+v", c)
	}
	if m := an.matched.Read(); m.ByRequest == 0 || m.ByQID == 0 {
		t.Fatalf("pairs by request %d, by qid %d: the stream should make both", m.ByRequest, m.ByQID)
	}
	if r.Events.Arm < 1000 {
		t.Fatalf("a took %d canary events", r.Events.Arm)
	}
	if heldBefore < 5 {
		t.Fatalf("observations were held before only %d of the reads", heldBefore)
	}
}

// TestTickJudgesSharedPairsOnce: the evaluation tick judges analyses that
// read the same pairs at the same levels on one paired sequence each
// (pairedMemo), and every analysis' recorded judgement is the one it has
// judged alone. a, b and d read one matcher total with check sets whose
// paired sequences agree (b's is a's, d's only tolerances differ); c's
// two checks fail at other levels; e starts once pairs were counted, so
// its pairs are its own.
func TestTickJudgesSharedPairsOnce(t *testing.T) {
	full := config.DefaultCheckSets()[config.CanaryCheckSet]
	loose := slices.Clone(full)
	for i := range loose {
		loose[i].Tolerance *= 2
	}
	var two []config.AnalysisCheck
	for _, c := range full {
		if c.Metric == "precision" || c.Metric == "delta_s_p90" {
			two = append(two, c)
		}
	}
	m := newTestManager(map[string][]config.AnalysisCheck{"full": full, "twin": slices.Clone(full), "loose": loose, "two": two})
	for id, set := range map[string]string{"a": "full", "b": "twin", "c": "two", "d": "loose"} {
		if _, _, err := m.Start(StartRequest{ID: id, Arm: "canary", Checks: set}, t0); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var o window.Observation
	ticks := 0
	for k := range 3000 {
		at := t0.Add(time.Duration(k) * 250 * time.Millisecond)
		if k == 700 {
			if _, _, err := m.Start(StartRequest{ID: "e", Arm: "canary", Checks: "full"}, at); err != nil {
				t.Fatal(err)
			}
		}
		arm := "live"
		if k%3 == 0 {
			arm = "canary"
		}
		q := rng.IntN(500)
		for run := range 3 {
			benchEvent(rng, arm, q, at.Add(time.Duration(run)*time.Second), &o)
			if err := m.ObserveAccepted(&o, o.Time); err != nil {
				t.Fatal(err)
			}
		}
		if k%300 != 299 {
			continue
		}
		m.Tick(at)
		ticks++
		for _, an := range m.List() {
			recorded := an.Recorded()
			if recorded == nil {
				t.Fatalf("step %d: %s has no recorded judgement", k, an.Spec().ID)
			}
			if alone := an.Result(); !reflect.DeepEqual(*recorded, alone) {
				t.Fatalf("step %d, %s: the tick judged\n%+v\nalone:\n%+v", k, an.Spec().ID, recorded, alone)
			}
		}
	}
	// One judgement of each, under one hold of the lock with one memo:
	// the shared total's sequences once per metric and levels.
	m.acc.Lock()
	defer m.acc.Unlock()
	memo := pairedMemo{}
	pairsOf := map[string]*window.Matches{}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		an, _ := m.Get(id)
		if got, alone := an.resultWithLocked(memo), an.resultWithLocked(nil); !reflect.DeepEqual(got, alone) {
			t.Fatalf("%s with the memo:\n%+v\nalone:\n%+v", id, got, alone)
		}
		pairsOf[id] = an.matched.Read()
	}
	if pairsOf["a"] != pairsOf["b"] || pairsOf["a"] != pairsOf["d"] || pairsOf["a"] == pairsOf["e"] {
		t.Fatal("a, b and d should read one total, e pairs of its own")
	}
	an, _ := m.Get("a")
	r := an.resultLocked()
	paired := 0
	for _, c := range r.Checks {
		if c.Pairs > 0 {
			paired++
		}
	}
	// a's (b's and d's alike), c's two at their own levels, e's own.
	if want := 2*paired + 2; len(memo) != want {
		t.Fatalf("the memo holds %d sequences, want %d (%d of a's checks read pairs)", len(memo), want, paired)
	}
	if ticks < 10 || paired < 6 {
		t.Fatalf("%d ticks, %d paired checks", ticks, paired)
	}
}

// richObservation is the k-th observation of a stream with every field the
// analyses read: 300 questions of their own difficulty, a tenth of the
// events up to 20 s late, request ids on two thirds, qids with and without
// keys, retrieval lists, ranking values, cited ΔS and λ runs.
func richObservation(rng *rand.Rand, k, ks int) window.Observation {
	at := t0.Add(time.Duration(k) * 80 * time.Millisecond)
	if rng.IntN(10) == 0 {
		at = at.Add(-time.Duration(rng.IntN(20_000)) * time.Millisecond) // late
	}
	arm := []string{"live", "live", "canary", "shadow"}[rng.IntN(4)]
	q := rng.IntN(300)
	right := float64(q%10) / 9
	good := rng.Float64() < right
	o := window.Observation{
		Arm: arm, Type: []string{"", "faq", "howto"}[q%3], QID: "q" + strconv.Itoa(q), Time: at,
		HasAnswer: true, Answerable: q%7 != 0, Shipped: rng.IntN(12) != 0, Hit: good, Contained: good, Triage: -1,
		HasRetrieval: true, HasRecallAtK: true, PrecisionAtK: make([]float64, ks), RecallAtK: make([]float64, ks),
		DeltaSRetrieved: make([]float64, 1+q%6),
		Lambda:          window.LambdaRun{State: window.LambdaConvergent},
	}
	if q%2 == 0 {
		o.QIDKey = uint32(q + 1) // the rest are keyed by their qid's hash
	}
	if q%3 != 0 {
		o.RequestID = "r" + strconv.Itoa(q) + "-" + strconv.Itoa(k/1000)
	}
	for i := range ks {
		if good || i >= 2 {
			o.RecallStrict |= 1 << i
			o.HitAtK |= 1 << i
		}
		o.PrecisionAtK[i] = float64(rng.IntN(5)) / 4
		o.RecallAtK[i] = float64(rng.IntN(3)) / 2
	}
	if q%4 != 0 {
		// Ranked: the ranking metrics' values, as checks.rankingOfMasks writes them.
		o.Means = make([]float64, window.MeansLen(ks))
		for i := range o.Means {
			o.Means[i] = float64(rng.IntN(9)) / 8
		}
		o.Counters.Set(window.CountRanked)
	}
	for i := range o.DeltaSRetrieved {
		o.DeltaSRetrieved[i] = rng.Float64()
	}
	if rng.IntN(3) > 0 {
		o.HasDeltaSCited, o.DeltaSCited = true, float64(q%97)/97+rng.Float64()/50
		o.DeltaSCited = min(o.DeltaSCited, 1)
	}
	if good != (right >= 0.5) {
		o.Lambda.State = window.LambdaDivergent
	}
	o.CoverageEligible, o.Covered = q%5 != 0, good
	if q%2 == 1 {
		o.Counters.Set(window.CountCitationAccEligible)
		if good {
			o.Counters.Set(window.CountCitationAccurate)
		}
	}
	if q%3 == 0 {
		o.Triage = (q/3 + k) % len(window.TriageLabels)
	}
	return o
}
