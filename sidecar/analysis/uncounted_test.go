package analysis

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/window"
)

// everySeriesSet is a check set reading the visits of every paired series:
// beside it, a Manager counts all of them.
func everySeriesSet(ks []int) []config.AnalysisCheck {
	var set []config.AnalysisCheck
	for _, s := range window.PairedSeries(ks) {
		set = append(set, config.AnalysisCheck{Name: s.Name, Metric: s.Name, Tolerance: 0.02, MinSamples: 100})
	}
	return set
}

func TestUncountedSeries(t *testing.T) {
	ks := []int{1, 3, 5, 10}
	var all []string
	for _, s := range window.PairedSeries(ks) {
		all = append(all, s.Name)
	}
	without := func(names ...string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(names, n) })
	}
	var canary []string
	for _, c := range config.DefaultCheckSets()[config.CanaryCheckSet] {
		canary = append(canary, c.Metric)
	}
	cases := []struct {
		name    string
		metrics []string
		want    []string
	}{
		{"the shipped canary set", canary, without("precision", "chr", "under_refusal", "over_refusal", "recall_at_5", "coverage", "citation_accuracy")},
		{"a ranking mean reads its denominator's", []string{"ndcg_at_5", "mrr"}, without("hit_at_1")},
		{"an unclustered mean reads none", []string{"mean_precision_at_5"}, all},
		{"λ, κ and ΔS read none", []string{"lambda_convergence", "kappa", "delta_s_p90"}, all},
		{"per k and per label", []string{"hit_at_3", "triage_retrieval_drift"}, without("hit_at_3", "triage_retrieval_drift")},
		{"an unknown metric reads none", []string{"precision", "no_such_metric"}, without("precision")},
		{"no check", nil, all},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := window.UncountedSeries(ks, tc.metrics); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestUncountedSeriesChangeNoReading: a Manager that leaves out the visits
// no configured check reads judges every analysis exactly as one that
// counts them all, reading after reading, through a checkpoint restored,
// and its checkpoints hold the same pairs and visit sums of every series
// it counts.
func TestUncountedSeriesChangeNoReading(t *testing.T) {
	lean := newTestManager(nil)
	sets := config.DefaultCheckSets()
	sets["every"] = everySeriesSet(lean.ks)
	full := newTestManager(sets)
	if len(lean.uncounted) == 0 || len(full.uncounted) != 0 {
		t.Fatalf("uncounted: the shipped sets %v, with every series read %v", lean.uncounted, full.uncounted)
	}
	both := []*Manager{lean, full}
	ids := []string{"a", "e", "s"}
	for _, m := range both {
		for _, r := range []StartRequest{{ID: "a", Arm: "canary"}, {ID: "e", Arm: "canary", Checks: config.EligibilityCheckSet}, {ID: "s", Arm: "shadow"}} {
			if _, _, err := m.Start(r, t0); err != nil {
				t.Fatal(err)
			}
		}
	}
	rng := rand.New(rand.NewPCG(21, 22))
	const steps = 9000
	for k := range steps {
		o := richObservation(rng, k, len(lean.ks))
		for _, m := range both {
			if err := m.Observe(&o, o.Time); err != nil {
				t.Fatalf("step %d: %v", k, err)
			}
		}
		if k == 4001 {
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
		if k%1500 != 1499 {
			continue
		}
		gotChanged, gotForgotten := lean.Tick(o.Time)
		wantChanged, wantForgotten := full.Tick(o.Time)
		if !reflect.DeepEqual(gotChanged, wantChanged) || !reflect.DeepEqual(gotForgotten, wantForgotten) {
			t.Fatalf("step %d: tick %+v %v, counting every series %+v %v", k, gotChanged, gotForgotten, wantChanged, wantForgotten)
		}
		for _, id := range ids {
			l, _ := lean.Get(id)
			f, _ := full.Get(id)
			if got, want := l.Result(), f.Result(); !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d, analysis %s:\n%+v\ncounting every series:\n%+v", k, id, got, want)
			}
		}
	}
	l, _ := lean.Get("a")
	f, _ := full.Get("a")
	ls, err := l.Save(SaveAll)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := f.Save(SaveAll)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ls.Uncounted, lean.uncounted) || fs.Uncounted != nil {
		t.Fatalf("saved uncounted %v and %v", ls.Uncounted, fs.Uncounted)
	}
	lm, err := window.DecodeMatches(ls.Matched, lean.ks)
	if err != nil {
		t.Fatal(err)
	}
	fm, err := window.DecodeMatches(fs.Matched, full.ks)
	if err != nil {
		t.Fatal(err)
	}
	var lc, fc window.Cumulative
	if err := json.Unmarshal(ls.Candidate, &lc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fs.Candidate, &fc); err != nil {
		t.Fatal(err)
	}
	for i, s := range window.PairedSeries(lean.ks) {
		uncounted := slices.Contains(lean.uncounted, s.Name)
		if got, want := lm.Visits[i], fm.Visits[i]; uncounted && len(got) != 0 || !uncounted && !reflect.DeepEqual(got, want) {
			t.Errorf("%s (uncounted %v): pairs' visits %v, counting every series %v", s.Name, uncounted, got, want)
		}
		if len(fm.Visits[i]) == 0 {
			t.Errorf("%s: the stream made no visits of it", s.Name)
		}
		lv, lok := lc.VisitVariance(s)
		fv, fok := fc.VisitVariance(s)
		if !uncounted && (lv != fv || lok != fok) {
			t.Errorf("%s: candidate visit variance %v %v, counting every series %v %v", s.Name, lv, lok, fv, fok)
		}
		if uncounted && lok && lv != 0 {
			t.Errorf("%s: left out, yet its visit variance is %v", s.Name, lv)
		}
	}
	if c := checkOf(t, l.Result(), "precision"); c.Pairs == 0 {
		t.Fatalf("the stream made no pairs: %+v", c)
	}
}

// TestUncountedSeriesRefuseAReader: accumulators that left out a series'
// visits are not restored into, nor merged for, an analysis whose check
// set reads it now, and the error says which check and series. Restored
// where it reads none, the analysis keeps counting them out.
func TestUncountedSeriesRefuseAReader(t *testing.T) {
	lean := newTestManager(nil)
	if _, _, err := lean.Start(StartRequest{ID: "a", Arm: "canary"}, t0); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(31, 32))
	for k := range 2000 {
		o := richObservation(rng, k, len(lean.ks))
		if err := lean.Observe(&o, o.Time); err != nil {
			t.Fatal(err)
		}
	}
	an, _ := lean.Get("a")
	saved, err := an.Save(SaveAll)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(saved.Uncounted, "hit_at_3") {
		t.Fatalf("hit_at_3 is counted: %v", saved.Uncounted)
	}

	// The canary set now reads hit_at_3.
	sets := config.DefaultCheckSets()
	sets[config.CanaryCheckSet] = append(sets[config.CanaryCheckSet], config.AnalysisCheck{Name: "hit3", Metric: "hit_at_3", Tolerance: 0.02, MinSamples: 100})
	reader := newTestManager(sets)
	err = reader.Restore(saved)
	if err == nil || !strings.Contains(err.Error(), `check "hit3"`) || !strings.Contains(err.Error(), "hit_at_3") {
		t.Fatalf("restore into a reader: %v", err)
	}
	if _, _, err := reader.Start(StartRequest{ID: "a", Arm: "canary"}, t0); err != nil {
		t.Fatal(err)
	}
	ra, _ := reader.Get("a")
	if _, err := ra.MergedResult([]Saved{saved}); err == nil || !strings.Contains(err.Error(), "hit_at_3") {
		t.Fatalf("merge for a reader: %v", err)
	}

	// Restored where every series is counted, it still counts hit_at_3
	// out: a later checkpoint says so.
	every := config.DefaultCheckSets()
	every["every"] = everySeriesSet(lean.ks)
	full := newTestManager(every)
	if err := full.Restore(saved); err != nil {
		t.Fatal(err)
	}
	fa, _ := full.Get("a")
	again, err := fa.Save(SaveAll)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Uncounted, saved.Uncounted) {
		t.Fatalf("after a restore, uncounted %v, saved %v", again.Uncounted, saved.Uncounted)
	}
	// A checkpoint that names nothing uncounted (as every one did before
	// series were left out) restores into the reader.
	saved.Uncounted = nil
	if err := reader.Restore(saved); err != nil {
		t.Fatal(err)
	}
}
