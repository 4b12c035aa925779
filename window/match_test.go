package window

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"
)

var matchKs = []int{1, 5}

// mobs is an answered observation of qid q, request r (may be ""),
// shipped and precise when good.
func mobs(q, r string, good bool) *Observation {
	o := &Observation{QID: q, RequestID: r, HasAnswer: true, Answerable: true, Shipped: true, Hit: good, Contained: good,
		HasRetrieval: true, PrecisionAtK: []float64{0, 0}, Triage: -1, Lambda: LambdaRun{Cited: 1}}
	if good {
		o.RecallStrict = 0b11
	}
	return o
}

func seriesIndexOf(t *testing.T, name string) int {
	t.Helper()
	return seriesIndexOfKs(t, matchKs, name)
}

const sec = int64(time.Second)

// Pairs are made by request first, else by qid oldest first, each event
// once, within the horizon; a candidate's pairs of one qid close together
// make one visit, counted once the gap and the lateness allowed are past.
func TestMatcherPairing(t *testing.T) {
	mt := NewMatcher(MatchOptions{Ks: matchKs, MinRuns: 3, Horizon: 60 * sec, MaxPending: 100, Gap: 5 * sec, Lateness: 10 * sec})
	v := NewMatched(matchKs, 0, math.MaxInt64)
	v.AttachTo(mt)
	prec := seriesIndexOf(t, "precision")
	rec5 := seriesIndexOf(t, "recall_at_5")

	mt.Offer(Baseline, mobs("q1", "r1", true), 1*sec)   // waits
	mt.Offer(Baseline, mobs("q1", "r2", false), 2*sec)  // waits
	mt.Offer(Candidate, mobs("q1", "r2", true), 3*sec)  // r2 by request: cand hit, base miss
	mt.Offer(Candidate, mobs("q1", "r9", false), 4*sec) // q1 by qid: the oldest, r1 (hit)
	mt.Offer(Candidate, mobs("q1", "", true), 5*sec)    // nothing of q1 waits: waits
	mt.Offer(Candidate, mobs("q2", "", true), 6*sec)    // waits
	mt.Offer(Baseline, mobs("q2", "", true), 100*sec)   // q2's candidate is 94 s away: past the horizon
	m := v.Counts()
	if m.ByRequest != 1 || m.ByQID != 1 {
		t.Fatalf("by request %d, by qid %d; want 1 and 1", m.ByRequest, m.ByQID)
	}
	if len(m.Visits[prec]) != 0 {
		t.Fatalf("a visit counted while it may still take runs: %v", m.Visits[prec])
	}
	// A pair of q3 at 30 s is past q1's visit (last run at 4 s) by more
	// than the gap and the lateness: q1's visit closes.
	mt.Offer(Baseline, mobs("q3", "", true), 29*sec)
	mt.Offer(Candidate, mobs("q3", "", true), 30*sec)
	m = v.Counts()
	// q1's visit: two pairs, both counted on both sides; candidate hits
	// 1, baseline hits 1 (r2: cand hit, base miss; r9: cand miss, base hit).
	var want VisitSummary
	for i, f := range []int{1, 2, 1, 2, 2, 1, 1} {
		want |= VisitSummary(f) << (8 * i)
	}
	for _, si := range []int{prec, rec5} {
		if len(m.Visits[si]) != 1 || m.Visits[si][want] != 1 {
			t.Errorf("series %d: visits %v, want one of %v", si, m.Visits[si], want)
		}
	}
	if want.Pairs() != 2 {
		t.Errorf("pairs %d, want 2", want.Pairs())
	}
	if mt.Expired() < 2 {
		t.Errorf("expired %d, want at least 2 (q1 at 5 s, q2 at 6 s)", mt.Expired())
	}
}

// Runs of one qid more than the gap apart are visits of their own.
func TestMatcherVisitGap(t *testing.T) {
	mt := NewMatcher(MatchOptions{Ks: matchKs, MinRuns: 3, Horizon: 600 * sec, MaxPending: 100, Gap: 5 * sec})
	v := NewMatched(matchKs, 0, math.MaxInt64)
	v.AttachTo(mt)
	for _, at := range []int64{0, 2, 4, 20, 21, 60} {
		mt.Offer(Baseline, mobs("q", "", true), at*sec)
		mt.Offer(Candidate, mobs("q", "", true), at*sec+1)
	}
	prec := seriesIndexOf(t, "precision")
	got := v.Counts().Visits[prec]
	var n int64
	for _, c := range got {
		n += c
	}
	// {0, 2, 4} and {20, 21} are closed; {60} is open.
	if n != 2 {
		t.Errorf("%d visits closed, want 2: %v", n, got)
	}
}

// A pair is taken by an analysis only when both its events fall in its
// time; one attached later, or ended, leaves the others out.
func TestMatchedViews(t *testing.T) {
	mt := NewMatcher(MatchOptions{Ks: matchKs, MinRuns: 2, Horizon: 60 * sec, MaxPending: 100, Gap: sec})
	early := NewMatched(matchKs, 0, math.MaxInt64)
	late := NewMatched(matchKs, 10*sec, math.MaxInt64)
	early.AttachTo(mt)
	late.AttachTo(mt)
	mt.Offer(Baseline, mobs("q", "", true), 5*sec)
	mt.Offer(Candidate, mobs("q", "", true), 12*sec) // baseline before late's start
	mt.Offer(Baseline, mobs("q", "", true), 13*sec)
	mt.Offer(Candidate, mobs("q", "", false), 14*sec)
	if e, l := early.Counts().ByQID, late.Counts().ByQID; e != 2 || l != 1 {
		t.Fatalf("early took %d pairs, late %d; want 2 and 1", e, l)
	}
	// Two pairs of q make a paired λ group (min runs 2): early's only.
	if g := early.Counts().Lambda[0].Pairs(); g != 1 {
		t.Errorf("early: %d paired λ groups, want 1", g)
	}
	if g := late.Counts().Lambda[0].Pairs(); g != 0 {
		t.Errorf("late: %d paired λ groups, want 0 (its first run is before late's start)", g)
	}
	late.SetEnd(20 * sec)
	mt.Offer(Baseline, mobs("q", "", true), 21*sec)
	mt.Offer(Candidate, mobs("q", "", true), 22*sec)
	if e, l := early.Counts().ByQID, late.Counts().ByQID; e != 3 || l != 1 {
		t.Errorf("after late's end: early %d, late %d; want 3 and 1", e, l)
	}
	late.Detach()
	mt.Offer(Baseline, mobs("q", "", true), 23*sec)
	mt.Offer(Candidate, mobs("q", "", true), 24*sec)
	if e, l := early.Counts().ByQID, late.Counts().ByQID; e != 4 || l != 1 {
		t.Errorf("after detaching late: early %d, late %d; want 4 and 1", e, l)
	}
}

// With MaxPending events waiting, the oldest is forgotten for each new one.
func TestMatcherCapacity(t *testing.T) {
	mt := NewMatcher(MatchOptions{Ks: matchKs, MinRuns: 3, Horizon: 3600 * sec, MaxPending: 3})
	v := NewMatched(matchKs, 0, math.MaxInt64)
	v.AttachTo(mt)
	for i, q := range []string{"a", "b", "c", "d"} {
		mt.Offer(Baseline, mobs(q, "", true), int64(i)*sec)
	}
	mt.Offer(Candidate, mobs("a", "", true), 10*sec) // a was pushed out
	mt.Offer(Candidate, mobs("d", "", true), 11*sec)
	if got := v.Counts().ByQID; got != 1 {
		t.Errorf("%d pairs, want 1 (d only)", got)
	}
	if mt.Expired() != 2 {
		t.Errorf("expired %d, want 2 (a, then the waiting candidate a pushing out b)", mt.Expired())
	}
}

// Judgement pairs match like events, into the joint label table.
func TestMatcherJudged(t *testing.T) {
	mt := NewMatcher(MatchOptions{Ks: matchKs, MinRuns: 3, Horizon: 60 * sec, MaxPending: 100})
	v := NewMatched(matchKs, 0, math.MaxInt64)
	v.AttachTo(mt)
	if err := mt.OfferJudged(Candidate, &PairObservation{QID: "q", RequestID: "r", Scholar: "VALID", Auditor: "REJECT"}, sec); err != nil {
		t.Fatal(err)
	}
	if err := mt.OfferJudged(Baseline, &PairObservation{QID: "q", RequestID: "r", Scholar: "VALID", Auditor: "VALID"}, 2*sec); err != nil {
		t.Fatal(err)
	}
	if err := mt.OfferJudged(Baseline, &PairObservation{QID: "q", Scholar: "NOPE", Auditor: "VALID"}, 2*sec); err == nil {
		t.Error("an unknown label was taken")
	}
	m := v.Counts()
	if m.JudgedByRequest != 1 || m.Judged[0*4+2][0] != 1 {
		t.Errorf("judged %+v by request %d", m.Judged[2], m.JudgedByRequest)
	}
}

// Counts round-trip by series name; a series this build does not pair is
// refused, and one it pairs that is missing starts at 0.
func TestMatchesEncoding(t *testing.T) {
	pack := func(f ...int) VisitSummary {
		var v VisitSummary
		for i, x := range f {
			v |= VisitSummary(x) << (8 * i)
		}
		return v
	}
	m := NewMatches(matchKs)
	m.Visits[0][pack(1, 2, 1, 2, 2, 1, 1)] = 7
	m.Visits[len(m.Visits)-1][pack(0, 1, 0, 0, 0, 0, 0)] = 3
	m.Visits[seriesIndexOf(t, "recall_at_5")][pack(3, 3, 2, 3, 3, 3, 2)] = 1
	m.Lambda[1][2][2] = 4
	m.Judged[3][5] = 2
	m.Cited[CitedVisit([]byte{0, 5, 0xff, 0xff, 3, 0xff, 3, 0xfe})] = 9
	m.ByRequest, m.ByQID, m.JudgedByQID = 5, 6, 2
	b, err := EncodeMatches(m, matchKs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeMatches(b, matchKs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, m)
	}
	if _, err := DecodeMatches(b, []int{1}); err == nil {
		t.Error("recall_at_5's table restored into a build without k = 5")
	}
	wider, err := DecodeMatches(b, []int{1, 5, 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(wider.Visits[seriesIndexOfKs(t, []int{1, 5, 10}, "recall_at_10")]) != 0 {
		t.Error("recall_at_10 restored with counts it never had")
	}
	for _, bad := range []string{`{"tables":{"lambda_convergence":[[0,0,0],[0,-1,0],[0,0,0]]}}`, `{"tables":{"precision":[[0,0,0],[0,1,0],[0,0,0]]}}`,
		`{"visits":{"precision":{"258":0}}}`, `{"visits":{"precision":{"1":1}}}`, `{"visits":{"nope":{"18":1}}}`,
		`{"judged":{"3/99":1}}`, `{"judged":{"x":1}}`, `{"by_qid":-2}`, `[`,
		`{"cited":{"0005ffff":0}}`, `{"cited":{"ffffffff":1}}`, `{"cited":{"0005":1}}`, `{"cited":{"0005FFFF":1}}`,
		`{"cited":{"04000000":1}}`, `{"cited":{"zz":1}}`} {
		if _, err := DecodeMatches([]byte(bad), matchKs); err == nil {
			t.Errorf("%s: decoded", bad)
		}
	}
}

func seriesIndexOfKs(t *testing.T, ks []int, name string) int {
	t.Helper()
	for i, s := range PairedSeries(ks) {
		if s.Name == name {
			return i
		}
	}
	t.Fatalf("no paired series %s", name)
	return -1
}

// cobs is mobs with a ΔS-cited value v (none when v < 0).
func cobs(q string, v float64) *Observation {
	o := mobs(q, "", true)
	if v >= 0 {
		o.HasDeltaSCited, o.DeltaSCited = true, v
	}
	return o
}

// A visit's pairs keep their ΔS-cited bins, sorted, with NoCited for a
// side without a value; a pair with none on either side is not kept, and
// alike visits count under one key.
func TestMatcherCitedVisits(t *testing.T) {
	mt := NewMatcher(MatchOptions{Ks: matchKs, MinRuns: 3, Horizon: 60 * sec, MaxPending: 100, Gap: 5 * sec})
	v := NewMatched(matchKs, 0, math.MaxInt64)
	v.AttachTo(mt)
	offer := func(q string, at int64, c, b float64) {
		mt.Offer(Baseline, cobs(q, b), at)
		mt.Offer(Candidate, cobs(q, c), at+1)
	}
	// q1's visit: (0.5, 0.25), (no value, 1.0: the last bin), (0.1, 0.1),
	// (none, none).
	offer("q1", 0, 0.5, 0.25)
	offer("q1", 1*sec, -1, 1.0)
	offer("q1", 2*sec, 0.1, 0.1)
	offer("q1", 3*sec, -1, -1)
	// q2 and q3: one pair each, alike.
	offer("q2", 10*sec, 0.3, 0.3)
	offer("q3", 11*sec, 0.3, 0.3)
	offer("q9", 100*sec, 0, 0) // closes the rest
	pair := func(c, b uint16) string { return string([]byte{byte(c >> 8), byte(c), byte(b >> 8), byte(b)}) }
	want := map[CitedVisit]int64{
		CitedVisit(pair(102, 102) + pair(512, 256) + pair(NoCited, 1023)): 1,
		CitedVisit(pair(307, 307)):                                        2,
	}
	got := v.Counts().Cited
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cited visits %x, want %x", got, want)
	}
	for k := range want {
		if k.invalid() {
			t.Errorf("%q: invalid", k)
		}
	}
	if c, b := CitedVisit(pair(NoCited, 1023)).Pair(0); c != NoCited || b != 1023 {
		t.Errorf("pair (%d, %d), want (NoCited, 1023)", c, b)
	}
	for _, bad := range []string{"", "abc", pair(NoCited, NoCited), pair(1024, 0), pair(5, 5) + pair(1, 1)} {
		if !CitedVisit(bad).invalid() {
			t.Errorf("%q: valid", bad)
		}
	}
}

// Views that share their Matcher's total count what views folding their
// own counts do, through every way a view stops sharing (a pair left out
// at its end, a restore, detaching) and beside a view attached later; the
// shared total lists its changes to Cited for their one reader.
func TestMatchedSharedViews(t *testing.T) {
	type step struct {
		side int
		o    *Observation
		at   int64
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var steps []step
	for i := range 6000 {
		q := rng.IntN(40)
		at := int64(i)*sec/4 - rng.Int64N(3*sec) // some late
		req := ""
		if rng.IntN(2) == 0 {
			req = "r" + strconv.Itoa(i/2)
		}
		cited := -1.0
		if rng.IntN(3) > 0 {
			cited = float64(q%10) / 10
		}
		o := cobs("q"+strconv.Itoa(q), cited)
		o.RequestID, o.Hit = req, rng.IntN(10) < 8
		steps = append(steps, step{side: i % 2, o: o, at: at})
	}
	type run struct {
		mt    *Matcher
		views map[string]*Matched
	}
	// play feeds the steps to a Matcher with views a, b, c (attached
	// before any pair), d (attached a third of the way) and r (restored
	// at half way), calling check at every 500th step.
	play := func(share bool, check func(i int, r run)) {
		shareTotals = share
		defer func() { shareTotals = true }()
		ks := matchKs
		r := run{mt: NewMatcher(MatchOptions{Ks: ks, MinRuns: 3, Horizon: 20 * sec, MaxPending: 1000, Gap: 2 * sec, Lateness: 3 * sec}), views: map[string]*Matched{}}
		for _, name := range []string{"a", "b", "c", "r"} {
			r.views[name] = NewMatched(ks, 0, math.MaxInt64)
			r.views[name].AttachTo(r.mt)
		}
		for i, s := range steps {
			switch i {
			case 1500:
				r.views["b"].SetEnd(s.at)
			case 2000:
				r.views["d"] = NewMatched(ks, s.at, math.MaxInt64)
				r.views["d"].AttachTo(r.mt)
			case 3000:
				r.views["r"].Restore(r.views["r"].Counts())
			case 4000:
				r.views["c"].Detach()
			}
			r.mt.Offer(s.side, s.o, s.at)
			if i%500 == 499 {
				check(i, r)
			}
		}
	}
	want := map[int]map[string][]byte{}
	play(false, func(i int, r run) {
		want[i] = map[string][]byte{}
		for name, v := range r.views {
			if v.Shared() != nil {
				t.Fatalf("step %d: %s shares the total with sharing off", i, name)
			}
			b, err := EncodeMatches(v.Counts(), matchKs)
			if err != nil {
				t.Fatal(err)
			}
			want[i][name] = b
		}
	})
	// cited follows the shared total's listed changes, as the analyses'
	// one reader of it does.
	cited := map[CitedVisit]int64{}
	var gen uint64
	sharedSeen := map[string]bool{}
	play(true, func(i int, r run) {
		for name, v := range r.views {
			if v.Shared() != nil {
				sharedSeen[name] = true
			}
			b, err := EncodeMatches(v.Counts(), matchKs)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != string(want[i][name]) {
				t.Fatalf("step %d, view %s (shared %v): counts %s\nwant %s", i, name, v.Shared() != nil, b, want[i][name])
			}
		}
		if a := r.views["a"]; a.Shared() != nil {
			m := a.Read()
			changes, g := m.TakeCitedChanges()
			if i > 499 && g != gen {
				t.Fatalf("step %d: the shared total's Cited changed unlisted", i)
			}
			gen = g
			for _, ch := range changes {
				if cited[ch.Visit] += ch.N; cited[ch.Visit] == 0 {
					delete(cited, ch.Visit)
				}
			}
			if !reflect.DeepEqual(cited, m.Cited) {
				t.Fatalf("step %d: the listed changes make %d cited visits, the total has %d", i, len(cited), len(m.Cited))
			}
		}
	})
	// a shares to the end; b stops at its first pair past its end, r at
	// its restore, c when detached; d, attached after pairs, never does.
	if want := map[string]bool{"a": true, "b": true, "c": true, "r": true}; !reflect.DeepEqual(sharedSeen, want) {
		t.Errorf("views seen sharing %v, want %v", sharedSeen, want)
	}
}
