package window

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// clearVisits zeroes cu's visit sums.
func (cu *Cumulative) clearVisits() {
	cu.fold()
	clear(cu.c.cnt[cu.l.visits : cu.l.visits+cu.l.nVisit])
}

// The visit sums give each per-event proportion the variance of visits as
// clusters, Σ (N_v − p·D_v)² / (Σ D_v)², worked out here from the visits
// directly: runs of one qid within one span of the gap are one visit; an
// attached accumulator counts the same from its Shared; a JSON round trip
// keeps them; and with one run a visit the variance is the binomial one.
func TestVisitSums(t *testing.T) {
	const gap = 10 * time.Second
	ks := DefaultKs
	rng := rand.New(rand.NewPCG(3, 4))
	own := NewCumulative(ks, 3)
	sh := NewShared(ks)
	sh.SetVisitGap(gap)
	att := NewCumulative(ks, 3)
	att.AttachTo(sh)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type visit struct{ n, d, cited float64 }
	byVisit := map[string]*visit{}
	var o Observation
	var p Prepared
	for i := range 3000 {
		q := rng.IntN(50)
		// Bursts: a question's runs come close together, its visits
		// spans apart.
		at := t0.Add(time.Duration(i) * 200 * time.Millisecond)
		o = Observation{QID: "q" + strconv.Itoa(q), QIDKey: uint32(q + 1), Time: at, HasAnswer: true, Answerable: true,
			Shipped: true, Hit: rng.Float64() < 0.3+0.01*float64(q), Contained: true, HasRetrieval: true,
			PrecisionAtK: make([]float64, len(ks)), Triage: -1}
		// Two thirds of the answers cite an item of known ΔS.
		if i%3 != 0 {
			o.HasDeltaSCited, o.DeltaSCited = true, rng.Float64()
		}
		if o.Hit {
			o.RecallStrict = 1<<len(ks) - 1
		}
		if err := Prepare(&o, len(ks), &p); err != nil {
			t.Fatal(err)
		}
		own.AddPrepared(&p)
		sh.AddAll(&p)
		key := o.QID + "/" + strconv.FormatInt(VisitSpan(at.UnixNano(), int64(gap)), 10)
		v := byVisit[key]
		if v == nil {
			v = &visit{}
			byVisit[key] = v
		}
		v.d++
		if o.Hit {
			v.n++
		}
		if o.HasDeltaSCited {
			v.cited++
		}
	}
	var sn, sd float64
	for _, v := range byVisit {
		sn, sd = sn+v.n, sd+v.d
	}
	pAll := sn / sd
	var ss float64
	for _, v := range byVisit {
		ss += (v.n - pAll*v.d) * (v.n - pAll*v.d)
	}
	want := ss / (sd * sd)
	var cn, csq float64
	for _, v := range byVisit {
		cn, csq = cn+v.cited, csq+v.cited*v.cited
	}
	if got, want := att.CitedDesignEffect(), csq/cn; math.Abs(got-want) > 1e-12*want || want <= 1 {
		t.Errorf("cited design effect %v, want Σ D² / Σ D = %v (> 1)", got, want)
	}
	if got := own.CitedDesignEffect(); math.Abs(got-csq/cn) > 1e-12 {
		t.Errorf("own: cited design effect %v, want %v", got, csq/cn)
	}
	s, _ := Lookup("precision")
	got, ok := att.VisitVariance(s)
	if !ok || math.Abs(got-want) > 1e-12*want {
		t.Errorf("attached: variance %v (ok %v), want %v", got, ok, want)
	}
	if got, _ := own.VisitVariance(s); math.Abs(got-want) > 1e-12*want {
		t.Errorf("own: variance %v, want %v", got, want)
	}
	// recall_at_5 counts the same hits over the same runs; looked up by
	// name, it knows no k index, which VisitVariance works out.
	r5, _ := Lookup("recall_at_5")
	if got, _ := att.VisitVariance(r5); math.Abs(got-want) > 1e-12*want {
		t.Errorf("recall_at_5: variance %v, want %v", got, want)
	}
	data, err := att.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back := new(Cumulative)
	if err := back.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	if got, _ := back.VisitVariance(s); math.Abs(got-want) > 1e-12*want {
		t.Errorf("round trip: variance %v, want %v", got, want)
	}
	// One run a visit: the binomial variance p(1 − p)/n.
	single := NewCumulative(ks, 3)
	var hits, n float64
	for i := range 500 {
		o = Observation{QID: "q" + strconv.Itoa(i), Time: t0, HasAnswer: true, Answerable: true, Shipped: true,
			Hit: i%3 == 0, Contained: true, Triage: -1}
		if err := single.Add(&o); err != nil {
			t.Fatal(err)
		}
		n++
		if o.Hit {
			hits++
		}
	}
	pb := hits / n
	if got := single.CitedDesignEffect(); got != 1 {
		t.Errorf("no cited value: design effect %v, want 1", got)
	}
	if got, _ := single.VisitVariance(s); math.Abs(got-pb*(1-pb)/n) > 1e-12 {
		t.Errorf("one run a visit: variance %v, want p(1−p)/n = %v", got, pb*(1-pb)/n)
	}
	if _, ok := single.VisitVariance(Series{Name: "delta_s_median", Row: registry[onceRows["delta_s_median"]]}); ok {
		t.Error("a quantile has a visit variance")
	}
}

// A ranking mean's variance is bounded by μ(1 − μ) times the design
// effect of its visits: μ(1 − μ)·Σ D_v² / (Σ D_v)², D_v a visit's ranked
// events. Runs of one question in one visit count as one cluster of
// their number; one run a visit gives the Bernoulli bound μ(1 − μ)/n.
func TestMeanVisitVariance(t *testing.T) {
	ks := DefaultKs
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mrr, _ := Lookup("mrr")
	ndcg, _ := Lookup("ndcg_at_10")
	if !VisitClustered(mrr) || !VisitClustered(ndcg) {
		t.Fatal("the ranking means are not VisitClustered")
	}
	if p, _ := Lookup("mean_precision_at_5"); VisitClustered(p) {
		t.Error("mean_precision_at_5 is VisitClustered, but no per-event proportion counts its events by visit")
	}
	for _, perVisit := range []int{1, 4} {
		cu := NewCumulative(ks, 3)
		sum, n := 0.0, 0
		for i := range 40 {
			q := i / perVisit
			v := float64(q%5) / 4
			o := Observation{QID: "q" + strconv.Itoa(q), QIDKey: uint32(q + 1), Time: t0.Add(time.Duration(i) * time.Millisecond),
				HasRetrieval: true, PrecisionAtK: make([]float64, len(ks)), Triage: -1, Means: make([]float64, MeansLen(len(ks)))}
			o.Counters.Set(CountRanked)
			o.Means[MeanIndex(SumRR, 0, len(ks))] = v
			if err := cu.Add(&o); err != nil {
				t.Fatal(err)
			}
			sum += v
			n++
		}
		mu := sum / float64(n)
		want := mu * (1 - mu) * float64(n/perVisit*perVisit*perVisit) / float64(n*n)
		got, ok := cu.VisitVariance(mrr)
		if !ok || math.Abs(got-want) > 1e-15 {
			t.Errorf("%d runs a visit: variance %v, %v; want %v", perVisit, got, ok, want)
		}
		if _, ok := cu.VisitVariance(Series{Name: "ndcg_at_7", Kind: Mean, Row: ndcg.Row, K: 7, index: -1}); ok {
			t.Error("a variance at a k the accumulator does not keep")
		}
	}
}
