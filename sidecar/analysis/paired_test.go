package analysis

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis/confseq"
	"github.com/shadoweval/shadoweval/window"
)

// coverageWorld is a stream model for the coverage of the paired
// comparisons: each question has its own chance of being answered at all
// (shipped) and of being right, drawn so that most questions are almost
// always one or the other, as real pipelines behave; the candidate answers
// some questions worse by its own draw.
type coverageWorld struct {
	ship, right [2][]float64 // [arm][question]
	// deltaS is the ΔS of the item each arm cites for each question: the
	// same at every run, as retrieval is deterministic per question.
	deltaS [2][]float64
	// truth is each arm's expected precision (right over shipped),
	// recall_at_5 (right over all) and ΔS p90 (of the shipped answers'
	// cited items): what the stream measures in the long run, questions
	// being asked uniformly.
	precision, recall, p90 [2]float64
}

func newCoverageWorld(rng *rand.Rand, questions int, worse float64) *coverageWorld {
	w := &coverageWorld{}
	for a := range 2 {
		w.ship[a] = make([]float64, questions)
		w.right[a] = make([]float64, questions)
		w.deltaS[a] = make([]float64, questions)
	}
	difficulty := func(m, k float64) float64 {
		// Two gamma draws by Marsaglia and Tsang are more than a test
		// needs: a mixture of a point mass at each end and a uniform.
		switch u := rng.Float64(); {
		case u < m*(1-k):
			return 1 - 0.02*rng.Float64()
		case u < 1-k:
			return 0.02 * rng.Float64()
		}
		return rng.Float64()
	}
	for q := range questions {
		s, r := difficulty(0.9, 0.3), difficulty(0.88, 0.3)
		// Logit-normal, median 0.33.
		ds := 1 / (1 + math.Exp(0.7-0.5*rng.NormFloat64()))
		w.ship[0][q], w.right[0][q], w.deltaS[0][q] = s, r, ds
		w.ship[1][q], w.right[1][q], w.deltaS[1][q] = s, r, ds
		if rng.Float64() < worse {
			w.right[0][q] = r * 0.2
			w.deltaS[0][q] = min(1, ds+0.2)
		}
	}
	for a := range 2 {
		var shipped, precise, right float64
		for q := range questions {
			shipped += w.ship[a][q]
			precise += w.ship[a][q] * w.right[a][q]
			right += w.right[a][q]
		}
		w.precision[a] = precise / shipped
		w.recall[a] = right / float64(questions)
		// The 0.9-quantile of the cited ΔS, each question weighing its
		// chance of being shipped: inf{x : F(x) ≥ 0.9}.
		order := make([]int, questions)
		for q := range order {
			order[q] = q
		}
		slices.SortFunc(order, func(x, y int) int { return cmp.Compare(w.deltaS[a][x], w.deltaS[a][y]) })
		cum := 0.0
		for _, q := range order {
			if cum += w.ship[a][q]; cum >= 0.9*shipped {
				w.p90[a] = w.deltaS[a][q]
				break
			}
		}
	}
	return w
}

// event fills o with one answer of arm a (0 candidate, 1 baseline) to
// question q at t.
func (w *coverageWorld) event(rng *rand.Rand, a, q int, t time.Time, o *window.Observation) {
	right := rng.Float64() < w.right[a][q]
	arm := "canary"
	if a == 1 {
		arm = "live"
	}
	*o = window.Observation{Arm: arm, QID: fmt.Sprint("q", q), QIDKey: uint32(q + 1), Time: t, HasAnswer: true, Answerable: true,
		Shipped: rng.Float64() < w.ship[a][q], Hit: right, Contained: true, Triage: -1,
		HasRetrieval: true, PrecisionAtK: o.PrecisionAtK[:0], HasDeltaSCited: true, DeltaSCited: w.deltaS[a][q]}
	for range 4 {
		o.PrecisionAtK = append(o.PrecisionAtK, 0)
	}
	if right {
		o.RecallStrict = 0b1111
	}
}

// The paired comparison keeps its level (SPEC §5.3): on streams whose
// questions differ in difficulty, a canary answering the same questions
// and one answering some of them worse, with many shared questions or so
// many questions that few are asked by both arms within the pairing
// horizon, the interval a check is judged on misses the true difference
// at some read, on its failing side in at most α/m of the runs, on its
// passing side in at most α. α is set high (0.6, m = 3 checks: 0.2 a
// failing side) so that misses happen at all and the rate can be seen;
// recall_at_5's pairs are exact, precision's and the ΔS p90's are
// linearised, the last from values that every run of a question repeats.
//
// SHADOWEVAL_SIM=1 runs 1,000 streams of 40 minutes a case instead of
// 60 of 20.
func TestPairedCoverage(t *testing.T) {
	runs, minutes := 60, 20
	if os.Getenv("SHADOWEVAL_SIM") != "" {
		runs, minutes = 1000, 40
	}
	if testing.Short() {
		runs = 20
	}
	const alpha = 0.3
	cfg := config.Default().Analysis
	cfg.Alpha = alpha
	cfg.Checks = map[string][]config.AnalysisCheck{"c": {
		{Name: "precision", Metric: "precision", Tolerance: 0.02, MinSamples: 100},
		{Name: "recall_at_5", Metric: "recall_at_5", Tolerance: 0.02, MinSamples: 100},
		{Name: "delta_s_p90", Metric: "delta_s_p90", Tolerance: 0.02, MinSamples: 100},
	}}
	metrics := []string{"precision", "recall_at_5", "delta_s_p90"}
	failSide := alpha / float64(len(metrics))
	for _, c := range []struct {
		name      string
		questions int
		worse     float64
	}{
		{"same answers, 300 questions", 300, 0},
		{"same answers, 200,000 questions (few pairs)", 200000, 0},
		{"5 % of questions answered worse, 300 questions", 300, 0.05},
		{"5 % worse, 200,000 questions (few pairs)", 200000, 0.05},
	} {
		missLo, missHi := map[string]int{}, map[string]int{}
		var pairs, events float64
		for r := range runs {
			rng := rand.New(rand.NewPCG(uint64(c.questions), uint64(r)))
			w := newCoverageWorld(rng, c.questions, c.worse)
			truth := map[string]float64{"precision": w.precision[0] - w.precision[1], "recall_at_5": w.recall[0] - w.recall[1], "delta_s_p90": w.p90[0] - w.p90[1]}
			m := NewManager(Options{Config: cfg, Ks: []int{1, 3, 5, 10}, MinRuns: 3})
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			if _, _, err := m.Start(StartRequest{ID: "cov", Arm: "canary", Baseline: "live", Checks: "c"}, t0); err != nil {
				t.Fatal(err)
			}
			an, _ := m.Get("cov")
			lo, hi := map[string]bool{}, map[string]bool{}
			var o window.Observation
			// Canary 4 events/s, live 16/s, read every 10 s; events come
			// in runs of 3 of one question.
			steps := minutes * 60 * 20 / 3
			for i := range steps {
				at := t0.Add(time.Duration(i) * 150 * time.Millisecond)
				a := 1
				if i%5 == 0 {
					a = 0
				}
				q := rng.IntN(c.questions)
				for run := range 3 {
					w.event(rng, a, q, at.Add(time.Duration(run)*10*time.Millisecond), &o)
					if err := m.Observe(&o, o.Time); err != nil {
						t.Fatal(err)
					}
				}
				if i%(10*20/3) != 0 {
					continue
				}
				for _, ck := range an.Result().Checks {
					if ck.Interval == nil {
						continue
					}
					d := truth[ck.Metric]
					lo[ck.Metric] = lo[ck.Metric] || ck.Interval[0] > d
					hi[ck.Metric] = hi[ck.Metric] || ck.Interval[1] < d
					if ck.UnpairedInterval != nil {
						lo["u"+ck.Metric] = lo["u"+ck.Metric] || ck.UnpairedInterval[0] > d
						hi["u"+ck.Metric] = hi["u"+ck.Metric] || ck.UnpairedInterval[1] < d
						lo["p"+ck.Metric] = lo["p"+ck.Metric] || ck.PairedInterval[0] > d
						hi["p"+ck.Metric] = hi["p"+ck.Metric] || ck.PairedInterval[1] < d
					}
				}
			}
			res := an.Result()
			pairs += float64(res.Checks[1].Pairs)
			events += float64(res.Events.Arm)
			for metric := range lo {
				if lo[metric] {
					missLo[metric]++
				}
				if hi[metric] {
					missHi[metric]++
				}
			}
		}
		t.Logf("%s: pairs %.0f of %.0f candidate events; of %d runs, missed from below %v, from above %v (u: the unpaired sequence, p: the paired one)",
			c.name, pairs/float64(runs), events/float64(runs), runs, missLo, missHi)
		for _, metric := range metrics {
			// The lower bound passes a metric where higher is better.
			loLevel, hiLevel := alpha, failSide
			if window.LowerIsBetter(metric) {
				loLevel, hiLevel = failSide, alpha
			}
			for _, side := range []struct {
				what  string
				k     int
				level float64
			}{{"lower bound above the truth", missLo[metric], loLevel}, {"upper bound below the truth", missHi[metric], hiLevel}} {
				// Allow binomial noise: three standard deviations.
				limit := side.level + 3*math.Sqrt(side.level*(1-side.level)/float64(runs))
				if rate := float64(side.k) / float64(runs); rate > limit {
					t.Errorf("%s: %s: %s in %d of %d runs (%.3f > %.3f)", c.name, metric, side.what, side.k, runs, rate, limit)
				}
			}
		}
	}
}

// TestPairedEstimateDeterministic: the paired estimate and interval are
// the same to the bit at every read of the same visits, whatever order a
// map yields them in; replicas and a restarted sidecar compare verdicts
// byte for byte.
func TestPairedEstimateDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	visits := map[window.VisitSummary]int64{}
	for range 400 {
		var v window.VisitSummary
		dc, db := 1+rng.IntN(6), 1+rng.IntN(6)
		nc, nb := rng.IntN(dc+1), rng.IntN(db+1)
		for i, f := range []int{nc, dc, nb, db, 0, 0, 0} {
			v |= window.VisitSummary(f) << (8 * i)
		}
		visits[v] += 1 + int64(rng.IntN(9))
	}
	lv := confseq.Both(0.05).Half()
	first := visitsPaired(visits, false, lv, PairedByQID, everySide)
	if !first.ok {
		t.Fatal("no paired bound from 400 visits")
	}
	for i := range 50 {
		if got := visitsPaired(visits, false, lv, PairedByQID, everySide); got != first {
			t.Fatalf("read %d: %+v, first read %+v", i, got, first)
		}
	}
}

// TestReadsKeepNothingStale: an analysis read after every visit, each
// read keeping what it unpacked of the pairs for the next, ends with the
// same result, to the byte, as a read that unpacks them anew.
func TestReadsKeepNothingStale(t *testing.T) {
	m := newTestManager(nil)
	if _, _, err := m.Start(StartRequest{ID: "a", Arm: "canary"}, t0); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for k := range 4000 {
		at := t0.Add(time.Duration(k) * 187500 * time.Microsecond)
		if k == 1000 {
			// b starts while visits are open: those it leaves out
			// reach it as exclusions, which its reads take back from
			// what they kept.
			if _, _, err := m.Start(StartRequest{ID: "b", Arm: "canary"}, at.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		observeStep(t, m, rng, k, nil)
		for _, an := range m.List() {
			an.Result()
		}
	}
	for _, id := range []string{"a", "b"} {
		an, _ := m.Get(id)
		kept, err := json.Marshal(an.Result())
		if err != nil {
			t.Fatal(err)
		}
		an.mu.Lock()
		an.cited = citedKept{}
		an.mu.Unlock()
		fresh, err := json.Marshal(an.Result())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(kept, fresh) {
			t.Fatalf("%s with what earlier reads kept:\n%s\nunpacked anew:\n%s", id, kept, fresh)
		}
		if p90 := checkOf(t, an.Result(), "delta_s_p90"); p90.PairedInterval == nil {
			t.Fatalf("%s: no paired ΔS p90 to compare: %+v", id, p90)
		}
	}
}

// observeStep observes step k of a stream in which live asks a question
// drawn from 300 every 187.5 ms, and the canary one every fourth step,
// each a visit of 3 runs a second apart; before, when set, is given each
// event's time before the event is observed.
func observeStep(t *testing.T, m *Manager, rng *rand.Rand, k int, before func(time.Time)) {
	t.Helper()
	at := t0.Add(time.Duration(k) * 187500 * time.Microsecond)
	arms := []string{"live"}
	if k%4 == 0 {
		arms = append(arms, "canary")
	}
	var o window.Observation
	for _, arm := range arms {
		q := rng.IntN(300)
		for r := range 3 {
			benchEvent(rng, arm, q, at.Add(time.Duration(r)*time.Second), &o)
			if before != nil {
				before(o.Time)
			}
			if err := m.Observe(&o, o.Time); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestShapesFollowBins: the visits' shapes a read gets, kept and moved a
// bin at a time as the quantiles wander, jumped to far bins, and followed
// as visits come and go, are those counted anew at the same bins.
func TestShapesFollowBins(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	cs := newCitedSample(nil, nil)
	bin := func() uint16 {
		if rng.IntN(8) == 0 {
			return window.NoCited
		}
		return uint16(400 + rng.IntN(200))
	}
	var added []window.CitedVisit
	visit := func() window.CitedVisit {
		n := 1 + rng.IntN(4)
		if rng.IntN(50) == 0 {
			n = 1 + rng.IntN(200)
		}
		prs := make([]uint32, n)
		for j := range prs {
			c, b := bin(), bin()
			if c == window.NoCited && b == window.NoCited {
				c = 500
			}
			if rng.IntN(3) == 0 {
				b = c // the same bin on both sides, and within a visit, is common
			}
			prs[j] = uint32(c)<<16 | uint32(b)
		}
		slices.Sort(prs)
		buf := make([]byte, 4*n)
		for j, p := range prs {
			binary.BigEndian.PutUint32(buf[4*j:], p)
		}
		return window.CitedVisit(buf)
	}
	for range 3000 {
		v := visit()
		added = append(added, v)
		cs.add(v, 1)
	}
	qs := [2][2]int{{500, 500}, {560, 540}} // a median's and a p90's bins
	for step := range 3000 {
		switch r := rng.IntN(100); {
		case r < 20:
			v := visit()
			added = append(added, v)
			cs.add(v, float64(1+rng.IntN(3)))
		case r < 25:
			// A visit taken back (an exclusion): one that was counted.
			if v := added[rng.IntN(len(added))]; cs.visits[cs.index[v]].n > 0 {
				cs.add(v, -1)
			}
		}
		k := step % 2
		switch r := rng.IntN(100); {
		case r < 5:
			qs[k] = [2]int{rng.IntN(window.CitedBins), rng.IntN(window.CitedBins)}
		case r < 60:
			qs[k][0] = min(max(qs[k][0]+rng.IntN(5)-2, 0), window.CitedBins-1)
			qs[k][1] = min(max(qs[k][1]+rng.IntN(5)-2, 0), window.CitedBins-1)
		}
		qc, qb := qs[k][0], qs[k][1]
		got := maps.Clone(cs.shapesAt(qc, qb))
		want := map[visitShape]float64{}
		for i, cv := range cs.visits {
			if cv.n != 0 {
				want[cs.shapeOf(i, qc, qb)] += cv.n
			}
		}
		for sh, n := range want {
			if n == 0 {
				delete(want, sh)
			}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("step %d at bins (%d, %d): kept %v, counted anew %v", step, qc, qb, got, want)
		}
	}
}

// TestNarrowingNeedsOnlyWhatPasses: a narrowing finds a side of a paired
// sequence only where it passes the running bound (confseq.BettingPast),
// and keeps the running bounds that finding every side would keep.
func TestNarrowingNeedsOnlyWhatPasses(t *testing.T) {
	m := newTestManager(nil)
	if _, _, err := m.Start(StartRequest{ID: "a", Arm: "canary"}, t0); err != nil {
		t.Fatal(err)
	}
	an, _ := m.Get("a")
	ref := make([]Bound, len(an.checks))
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-8 }
	sameBound := func(x, y Bound) bool { return x.Set == y.Set && near(x.Lo, y.Lo) && near(x.Hi, y.Hi) }
	rng := rand.New(rand.NewPCG(5, 5))
	narrowings, sides, skipped := 0, 0, 0
	// compare, before an event at ts is taken, judges the state a
	// narrowing at ts would narrow with, for every side and as the
	// narrowing judges it.
	compare := func(ts time.Time) {
		if period := ts.Unix() / narrowEvery; an.lastPeriod != 0 && period > an.lastPeriod {
			// The state the first event of the period will narrow with:
			// judged for every side, and as the narrowing judges it.
			narrowings++
			an.mu.Lock()
			a := an.armsLocked()
			full, _, _ := judge(an.checks, &a, an.alpha, nil)
			a.narrowing = true
			part, _, _ := judge(an.checks, &a, an.alpha, an.run)
			an.keepCitedLocked(&a)
			run := slices.Clone(an.run)
			narrows := an.narrowsLocked(period)
			an.mu.Unlock()
			for i := range full {
				if !full[i].nowOK || narrows == nil || !narrows[i] {
					continue
				}
				want, got := run[i], run[i]
				want.meet(full[i].now)
				got.meet(part[i].now)
				if !sameBound(got, want) {
					t.Fatalf("narrowing %d, %s: keeps %+v, every side found %+v (running %+v)", narrowings, an.checks[i].Name, got, want, run[i])
				}
				if f, p := full[i].PairedInterval, part[i].PairedInterval; f != nil && p != nil {
					sides += 2
					for s := range 2 {
						if !near(f[s], p[s]) {
							skipped++
						}
					}
				}
				ref[i].meet(full[i].now)
			}
		}
	}
	for k := range 8000 {
		observeStep(t, m, rng, k, compare)
	}
	for i := range ref {
		if !sameBound(an.run[i], ref[i]) {
			t.Errorf("%s: running bound %+v, every side found %+v", an.checks[i].Name, an.run[i], ref[i])
		}
	}
	t.Logf("%d narrowings, %d paired sides, %d of them not found", narrowings, sides, skipped)
	if skipped < sides/4 {
		t.Errorf("only %d of %d paired sides left unfound: the fixture does not test the shortcut", skipped, sides)
	}
}

// TestPastForKeepsNarrowing: whatever the running bound, the unpaired
// and the paired sequences (meeting or not), a paired side left at the
// end of its range where it does not pass pastFor's bound narrows the
// running bound as the side itself would.
func TestPastForKeepsNarrowing(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	interval := func() confseq.Interval {
		x, y := rng.Float64()*2-1, rng.Float64()*2-1
		return confseq.Interval{Lo: min(x, y), Hi: max(x, y)}
	}
	left := 0
	for range 200000 {
		r, u, p := interval(), interval(), interval()
		run := Bound{Lo: r.Lo, Hi: r.Hi, Set: true}
		past := pastFor(run, u)
		found := p
		if p.Lo <= past.Lo {
			found.Lo = -1 - rng.Float64()
			left++
		}
		if p.Hi >= past.Hi {
			found.Hi = 1 + rng.Float64()
			left++
		}
		lowPasses := rng.IntN(2) == 0
		want, got := run, run
		want.meet(combine(u, p, lowPasses))
		got.meet(combine(u, found, lowPasses))
		if got != want {
			t.Fatalf("running %v, unpaired %v, paired %v left as %v: narrows to %+v, not %+v", r, u, p, found, got, want)
		}
	}
	if left == 0 {
		t.Fatal("no side was left unfound")
	}
}

// TestDecidedChecksNarrowSparsely: a check its running bound passes or
// fails is narrowed only at the periods of decidedNarrowingBetween; every
// other check is narrowed every period, to the bound narrowing every
// check every period keeps; and a reading at any period gives each check
// the verdict that narrowing everything would give.
func TestDecidedChecksNarrowSparsely(t *testing.T) {
	m := newTestManager(nil)
	if _, _, err := m.Start(StartRequest{ID: "a", Arm: "canary"}, t0); err != nil {
		t.Fatal(err)
	}
	an, _ := m.Get("a")
	// ref narrows every check at every period.
	ref := make([]Bound, len(an.checks))
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-8 }
	sameBound := func(x, y Bound) bool { return x.Set == y.Set && near(x.Lo, y.Lo) && near(x.Hi, y.Hi) }
	rng := rand.New(rand.NewPCG(6, 6))
	var prevRun []Bound
	var prevNarrows []bool
	periods, skipped, decidedNarrowed := 0, 0, 0
	decided := map[string]bool{}
	compare := func(ts time.Time) {
		period := ts.Unix() / narrowEvery
		if an.lastPeriod == 0 || period <= an.lastPeriod {
			return
		}
		periods++
		an.mu.Lock()
		defer an.mu.Unlock()
		// What the narrowing at the last period left alone is as it was.
		for i := range prevRun {
			if (prevNarrows == nil || !prevNarrows[i]) && an.run[i] != prevRun[i] {
				t.Fatalf("period %d, %s: narrowed to %+v though not due (was %+v)", periods, an.checks[i].Name, an.run[i], prevRun[i])
			}
		}
		a := an.armsLocked()
		full, _, _ := judge(an.checks, &a, an.alpha, nil)
		read, _, _ := judge(an.checks, &a, an.alpha, an.run)
		every, _, _ := judge(an.checks, &a, an.alpha, ref)
		an.keepCitedLocked(&a)
		narrows := an.narrowsLocked(period)
		due := decidedNarrowingBetween(an.lastPeriod-an.startPeriod(), period-an.startPeriod())
		for i, c := range an.checks {
			if read[i].Verdict != every[i].Verdict {
				t.Fatalf("period %d, %s: read %s %v, narrowing everything %s %v", periods, c.Name, read[i].Verdict, read[i].Interval, every[i].Verdict, every[i].Interval)
			}
			isDecided := false
			if b := an.run[i]; b.Set {
				v, _ := checkKinds[c.Kind()].decide(c, window.LowerIsBetter(c.Metric), confseq.Interval{Lo: b.Lo, Hi: b.Hi})
				isDecided = v == Pass || v == Fail
			}
			if !isDecided && !sameBound(an.run[i], ref[i]) {
				t.Fatalf("period %d, %s (undecided): running bound %+v, narrowing everything %+v", periods, c.Name, an.run[i], ref[i])
			}
			if isDecided {
				decided[c.Name] = true
				if narrows == nil || !narrows[i] {
					if due {
						t.Fatalf("period %d, %s: decided and due, but not narrowed", periods, c.Name)
					}
					skipped++
				} else {
					decidedNarrowed++
				}
			} else if narrows == nil || !narrows[i] {
				t.Fatalf("period %d, %s: undecided, but not narrowed", periods, c.Name)
			}
			if full[i].nowOK {
				ref[i].meet(full[i].now)
			}
		}
		prevRun, prevNarrows = slices.Clone(an.run), narrows
	}
	for k := range 12000 {
		observeStep(t, m, rng, k, compare)
	}
	t.Logf("%d periods; %d checks decided; narrowings of decided checks: %d left out, %d made", periods, len(decided), skipped, decidedNarrowed)
	if len(decided) < len(an.checks)/2 || skipped < 10*decidedNarrowed {
		t.Errorf("%d of %d checks decided, %d narrowings of them left out and %d made: the fixture does not test the schedule", len(decided), len(an.checks), skipped, decidedNarrowed)
	}
}

// TestDecidedNarrowingSchedule: the ages at which decided checks are
// narrowed: every period up to 8, then 16, 32, 64, ….
func TestDecidedNarrowingSchedule(t *testing.T) {
	for _, c := range []struct {
		from, to int64
		want     bool
	}{
		{0, 1, true}, {1, 2, true}, {7, 8, true}, {8, 9, false}, {8, 15, false}, {8, 16, true},
		{15, 16, true}, {16, 31, false}, {16, 32, true}, {0, 100, true}, {64, 127, false}, {100, 128, true},
		{4096, 8191, false}, {8191, 8192, true}, {5, 5, false},
	} {
		if got := decidedNarrowingBetween(c.from, c.to); got != c.want {
			t.Errorf("ages (%d, %d]: %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

// Analyses of the same arms started together read one total of pairs and
// one unpacked cited-ΔS sample (window.Matched shares it): each reading,
// narrowing and verdict is the one it has running alone, whether the
// others read often, seldom or end, and beside an analysis started later
// (which folds pairs of its own; alone it would pair differently, the
// events before its start never waiting for a partner).
func TestAnalysesSharingPairsJudgeAsAlone(t *testing.T) {
	together := newTestManager(nil)
	alone := map[string]*Manager{}
	start := func(id string, at time.Time) {
		t.Helper()
		for _, m := range []*Manager{together, alone[id]} {
			if m == nil {
				continue
			}
			if _, _, err := m.Start(StartRequest{ID: id, Arm: "canary"}, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	ids := []string{"a", "b", "c"}
	for _, id := range ids {
		alone[id] = newTestManager(nil)
	}
	for _, id := range ids[:3] {
		start(id, t0)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	var o window.Observation
	for k := range 2400 {
		at := t0.Add(time.Duration(k) * 250 * time.Millisecond)
		if k == 800 {
			start("late", at)
		}
		if k == 1600 {
			for _, m := range []*Manager{together, alone["b"]} {
				if _, ok := m.End("b", at); !ok {
					t.Fatal("b did not end")
				}
			}
		}
		arm := "live"
		if k%4 == 0 {
			arm = "canary"
		}
		q := rng.IntN(600)
		for run := range 3 {
			benchEvent(rng, arm, q, at.Add(time.Duration(run)*time.Second), &o)
			if err := together.Observe(&o, o.Time); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				if err := alone[id].Observe(&o, o.Time); err != nil {
					t.Fatal(err)
				}
			}
		}
		// a is read every step, c every 50th, the others every 200th: the
		// readers of the shared sample take its changes at different times.
		for _, id := range ids {
			if id == "a" || (id == "c" && k%50 == 49) || k%200 == 199 {
				an, ok := together.Get(id)
				if !ok {
					continue
				}
				ref, _ := alone[id].Get(id)
				got, want := an.Result(), ref.Result()
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d, %s beside the others:\n%+v\nalone:\n%+v", k, id, got, want)
				}
			}
		}
	}
	an, _ := together.Get("a")
	r := an.Result()
	if c := checkOf(t, r, "delta_s_p90"); c.Pairs == 0 || c.Interval == nil {
		t.Fatalf("the cited-ΔS check read no pairs: %+v", c)
	}
}

// TestCombine: two sequences that meet decide on their intersection; two
// that do not, on the one on the failing side, so that the check fails
// when either alone fails and passes only when both pass.
func TestCombine(t *testing.T) {
	iv := func(lo, hi float64) confseq.Interval { return confseq.Interval{Lo: lo, Hi: hi} }
	for _, c := range []struct {
		x, y      confseq.Interval
		lowPasses bool
		want      confseq.Interval
	}{
		{iv(-0.03, 0.01), iv(-0.01, 0.02), true, iv(-0.01, 0.01)},
		{iv(-0.03, 0.01), iv(-0.01, 0.02), false, iv(-0.01, 0.01)},
		{iv(-0.03, -0.01), iv(-0.01, 0.02), true, iv(-0.01, -0.01)}, // touching: they meet
		{iv(-0.16, -0.12), iv(-0.07, -0.003), true, iv(-0.16, -0.12)},
		{iv(-0.07, -0.003), iv(-0.16, -0.12), true, iv(-0.16, -0.12)},
		{iv(0.31, 0.39), iv(-0.06, 0.10), false, iv(0.31, 0.39)},
		{iv(-0.06, 0.10), iv(0.31, 0.39), false, iv(0.31, 0.39)},
		{iv(-0.06, 0.10), iv(0.31, 0.39), true, iv(-0.06, 0.10)},
	} {
		if got := combine(c.x, c.y, c.lowPasses); got != c.want {
			t.Errorf("combine(%v, %v, low passes %v) = %v, want %v", c.x, c.y, c.lowPasses, got, c.want)
		}
	}
}
