package window

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// randomObservation draws an observation exercising every counter.
func randomObservation(rng *rand.Rand, nk int, o *Observation) {
	*o = Observation{
		QID: "q" + strconv.Itoa(rng.IntN(40)), HasAnswer: rng.Float64() < 0.9, Answerable: rng.Float64() < 0.8,
		Shipped: rng.Float64() < 0.9, Contained: rng.Float64() < 0.8, Hit: rng.Float64() < 0.85,
		HasRetrieval: rng.Float64() < 0.95, RecallStrict: uint32(rng.IntN(1 << nk)),
		CoverageEligible: rng.Float64() < 0.7, Covered: rng.Float64() < 0.8,
	}
	setCitationAccuracy(o, rng.Float64() < 0.5, rng.Float64() < 0.9)
	o.HasAnchorDistance, o.AnchorDistance = rng.Float64() < 0.5, rng.IntN(4)
	o.Triage = rng.IntN(len(TriageLabels)+1) - 1
	if o.HasRetrieval {
		for range nk {
			o.PrecisionAtK = append(o.PrecisionAtK, rng.Float64())
		}
	}
	if o.HasRecallAtK = rng.Float64() < 0.8; o.HasRecallAtK {
		for range nk {
			o.RecallAtK = append(o.RecallAtK, rng.Float64())
		}
		if rng.Float64() < 0.9 {
			setRanking(rng, nk, o)
		}
	}
	for range rng.IntN(5) {
		o.DeltaSRetrieved = append(o.DeltaSRetrieved, rng.Float64())
	}
	if o.HasDeltaSCited = o.HasAnswer && o.Shipped && rng.Float64() < 0.9; o.HasDeltaSCited {
		o.DeltaSCited = rng.Float64()
	}
	o.Lambda = LambdaRun{State: LambdaState(rng.IntN(4)), Refused: !o.Shipped, Cited: uint64(rng.IntN(2))}
}

// Every metric but the λ ones and the retrieved-ΔS quantiles equals what a
// window holding the same observations reports: the formulas are shared.
func TestCumulativeMatchesWindow(t *testing.T) {
	ks := []int{1, 3, 5, 10}
	w := newWindows(t, Config{Ks: ks})
	cu := NewCumulative(ks, 3)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	var o Observation
	for range 5000 {
		randomObservation(rng, len(ks), &o)
		o.Time = now
		mustAdd(t, w, &o, now)
		if err := cu.Add(&o); err != nil {
			t.Fatal(err)
		}
	}
	for range 300 {
		p := PairObservation{Time: now, Scholar: JudgementLabels[rng.IntN(4)], Auditor: JudgementLabels[rng.IntN(4)]}
		if err := w.AddPair(&p, now); err != nil {
			t.Fatal(err)
		}
		if err := cu.AddPair(&p); err != nil {
			t.Fatal(err)
		}
	}
	want := snapshot(t, w, DefaultArm, "5m", "", now)
	got := cu.Metrics()
	if len(got) != len(want) {
		t.Fatalf("%d metrics, window has %d", len(got), len(want))
	}
	for name, wv := range want {
		switch name {
		case "lambda_convergence", "lambda_flip_rate", "delta_s_retrieved_median", "delta_s_retrieved_p90":
			continue
		}
		if gv := got[name]; gv != wv {
			t.Errorf("%s: cumulative %+v, window %+v", name, gv, wv)
		}
	}
	if got["delta_s_retrieved_median"].Valid {
		t.Error("the accumulator kept retrieved ΔS, which no analysis judges")
	}
	if cu.CitedCount() != want["delta_s_p90"].Samples {
		t.Errorf("cited count %d, window %d", cu.CitedCount(), want["delta_s_p90"].Samples)
	}
	if q := cu.CitedQuantile(0.9); q != want["delta_s_p90"].Value {
		t.Errorf("p90 %v, window %v", q, want["delta_s_p90"].Value)
	}
}

// λ groups are consecutive blocks of minRuns runs of one qid, each judged
// once when complete.
func TestCumulativeLambdaBlocks(t *testing.T) {
	cu := NewCumulative(DefaultKs, 3)
	run := func(qid string, s LambdaState) {
		t.Helper()
		if err := cu.Add(&Observation{QID: qid, HasAnswer: true, Answerable: true, Shipped: true, Triage: -1, Lambda: LambdaRun{State: s}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		run("a", LambdaConvergent) // a: one convergent group
	}
	run("b", LambdaConvergent)
	run("b", LambdaDivergent)
	run("b", LambdaConvergent) // b: flips
	for range 5 {
		run("a", LambdaConvergent) // a: a second group, and 2 runs open
	}
	run("c", LambdaConvergent) // c: open
	m := cu.Metrics()
	if v := m["lambda_convergence"]; v.Samples != 3 || v.Num != 2 {
		t.Errorf("convergence %+v, want 2 of 3 groups", v)
	}
	if v := m["lambda_flip_rate"]; v.Samples != 3 || v.Num != 1 {
		t.Errorf("flip rate %+v, want 1 of 3", v)
	}
	// A run with no answer and no state is no λ run.
	if err := cu.Add(&Observation{QID: "c", HasRetrieval: true, PrecisionAtK: make([]float64, len(DefaultKs)), Triage: -1}); err != nil {
		t.Fatal(err)
	}
	run("c", LambdaConvergent)
	if v := cu.Metrics()["lambda_convergence"]; v.Samples != 3 {
		t.Errorf("a retrieval-only run completed a group: %+v", v)
	}
	if err := cu.Add(&Observation{HasRetrieval: true, PrecisionAtK: []float64{1}}); err == nil {
		t.Error("an observation of the wrong shape was accepted")
	}
}

// checkpoint encodes cu as a checkpoint and restores a new accumulator
// from it, as a restarted process does.
func checkpoint(t *testing.T, cu *Cumulative) (data []byte, back *Cumulative) {
	t.Helper()
	data, err := json.Marshal(cu)
	if err != nil {
		t.Fatal(err)
	}
	back = new(Cumulative)
	if err := json.Unmarshal(data, back); err != nil {
		t.Fatal(err)
	}
	return data, back
}

// A checkpoint round-trips to the same metrics and keeps the open groups;
// Merge adds two accumulators up.
func TestCumulativeJSONAndMerge(t *testing.T) {
	ks := []int{1, 5}
	a, b, all := NewCumulative(ks, 3), NewCumulative(ks, 3), NewCumulative(ks, 3)
	rng := rand.New(rand.NewPCG(3, 4))
	var o Observation
	for i := range 3000 {
		randomObservation(rng, len(ks), &o)
		half := a
		if i%2 == 1 {
			half = b
		}
		for _, cu := range []*Cumulative{half, all} {
			if err := cu.Add(&o); err != nil {
				t.Fatal(err)
			}
		}
	}
	data, back := checkpoint(t, a)
	again, _ := json.Marshal(back)
	if string(again) != string(data) {
		t.Errorf("round trip changed the checkpoint:\n%s\n%s", data, again)
	}
	if err := back.Merge(b); err != nil {
		t.Fatal(err)
	}
	got, want := back.Metrics(), all.Metrics()
	for name, wv := range want {
		gv := got[name]
		if name == "lambda_convergence" || name == "lambda_flip_rate" {
			// Interleaved runs fall into other blocks than merged halves
			// do: compare the group counts only roughly.
			if gv.Samples < wv.Samples*9/10 || gv.Samples > wv.Samples {
				t.Errorf("%s: merged %+v, single %+v", name, gv, wv)
			}
			continue
		}
		if !near(gv.Value, wv.Value, 1e-12) || gv.Samples != wv.Samples {
			t.Errorf("%s: merged %+v, single %+v", name, gv, wv)
		}
	}
	if err := back.Merge(NewCumulative([]int{1}, 3)); err == nil {
		t.Error("merged accumulators of other cut-offs")
	}
	if err := json.Unmarshal([]byte(`{"ks":[1,5],"min_runs":3,"counts":[1]}`), back); err == nil {
		t.Error("a truncated checkpoint was accepted")
	}
}

// A checkpoint read back from the KV bucket is untrusted: whatever it
// holds, decoding never panics, and what decodes encodes back the same.
func FuzzCumulativeJSON(f *testing.F) {
	cu := NewCumulative([]int{1, 5}, 3)
	rng := rand.New(rand.NewPCG(5, 6))
	var o Observation
	for range 50 {
		randomObservation(rng, 2, &o)
		if err := cu.Add(&o); err != nil {
			f.Fatal(err)
		}
	}
	good, err := json.Marshal(cu)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"ks":[1],"min_runs":3,"counts":[],"sums":[]}`))
	f.Add([]byte(`{"ks":[1],"min_runs":1,"cited":{"n":1,"bins":{"999999999":1}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Cumulative
		if err := json.Unmarshal(data, &c); err != nil {
			return
		}
		c.Metrics()
		first, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		var again Cumulative
		if err := json.Unmarshal(first, &again); err != nil {
			t.Fatalf("re-decoding %s: %v", first, err)
		}
		if second, _ := json.Marshal(&again); string(second) != string(first) {
			t.Fatalf("not stable:\n%s\n%s", first, second)
		}
	})
}

// A checkpoint's open λ groups are found again in a process that numbers
// the qids otherwise: the groups continue as if nothing had happened.
func TestCumulativeGroupsAcrossNumberings(t *testing.T) {
	qids := []string{"alpha", "beta", "gamma", "delta"}
	rng := rand.New(rand.NewPCG(7, 7))
	type run struct {
		qid   int
		state LambdaState
	}
	runs := make([]run, 400)
	for i := range runs {
		runs[i] = run{rng.IntN(len(qids)), LambdaState(1 + rng.IntN(3))}
	}
	add := func(cu *Cumulative, r run, key uint32) {
		t.Helper()
		o := Observation{QID: qids[r.qid], QIDKey: key, HasAnswer: true, Answerable: true, Shipped: true, Triage: -1, Lambda: LambdaRun{State: r.state}}
		if err := cu.Add(&o); err != nil {
			t.Fatal(err)
		}
	}
	whole := NewCumulative(DefaultKs, 3)
	for _, r := range runs {
		add(whole, r, uint32(r.qid+1))
	}
	first := NewCumulative(DefaultKs, 3)
	for _, r := range runs[:201] {
		add(first, r, uint32(r.qid+1))
	}
	_, second := checkpoint(t, first)
	for _, r := range runs[201:] {
		add(second, r, uint32(len(qids)-r.qid)+10) // another numbering
	}
	for _, m := range []string{"lambda_convergence", "lambda_flip_rate"} {
		if got, want := second.Metrics()[m], whole.Metrics()[m]; got != want {
			t.Errorf("%s after a restart: %+v, uninterrupted %+v", m, got, want)
		}
	}
}

// A checkpoint keeps its counts by name: a build with a count more or less
// restores the others, reordered names restore the same counts, an older
// checkpoint without names restores by position, and a count this build
// does not keep is refused rather than dropped.
func TestCheckpointCountsByName(t *testing.T) {
	ks := []int{1, 3, 5, 10}
	cu, data := randomCheckpoint(t, ks, 7)
	want := cu.c.cnt
	names := cu.l.countNames(ks)
	seen := map[string]bool{}
	for i, n := range names {
		if n == "" || seen[n] {
			t.Fatalf("count %d is named %q, empty or twice", i, n)
		}
		seen[n] = true
	}
	covered := -1
	for i, n := range names {
		if n == "covered" {
			covered = i
		}
	}
	if covered < 0 || want[covered] == 0 {
		t.Fatalf("the test needs a non-zero \"covered\" count: %v", want)
	}

	// edit changes the checkpoint's counts and names, then restores it.
	restore := func(edit func(s map[string]any)) (*Cumulative, error) { return restoreEdited(t, ks, data, edit) }
	pairs := func(s map[string]any) ([]any, []any) { return s["count_names"].([]any), s["counts"].([]any) }

	got, err := restore(func(map[string]any) {})
	if err != nil || !equalInts(got.c.cnt, want) {
		t.Fatalf("as written: %v, counts %v, want %v", err, got.c.cnt, want)
	}
	got, err = restore(func(s map[string]any) {
		n, c := pairs(s)
		for i, j := 0, len(n)-1; i < j; i, j = i+1, j-1 {
			n[i], n[j], c[i], c[j] = n[j], n[i], c[j], c[i]
		}
	})
	if err != nil || !equalInts(got.c.cnt, want) {
		t.Fatalf("reordered: %v, counts %v, want %v", err, got.c.cnt, want)
	}
	got, err = restore(func(s map[string]any) {
		n, c := pairs(s)
		s["count_names"], s["counts"] = append(n[:covered:covered], n[covered+1:]...), append(c[:covered:covered], c[covered+1:]...)
	})
	if err != nil {
		t.Fatalf("without \"covered\" (an older build's checkpoint): %v", err)
	}
	for i := range want {
		if w := want[i]; i == covered && got.c.cnt[i] != 0 || i != covered && got.c.cnt[i] != w {
			t.Fatalf("without \"covered\": count %s is %d, want %d (0 for covered)", names[i], got.c.cnt[i], w)
		}
	}
	got, err = restore(func(s map[string]any) { delete(s, "count_names") })
	if err != nil || !equalInts(got.c.cnt, want) {
		t.Fatalf("by position: %v, counts %v, want %v", err, got.c.cnt, want)
	}
	for _, tc := range []struct {
		name, wantErr string
		edit          func(s map[string]any)
	}{
		{"unknown count", `count "refused_by_policy" is not one this build keeps`, func(s map[string]any) {
			n, c := pairs(s)
			s["count_names"], s["counts"] = append(n, "refused_by_policy"), append(c, 3)
		}},
		{"a count twice", `count "shipped" twice`, func(s map[string]any) {
			n, _ := pairs(s)
			n[1] = "shipped"
		}},
		{"names and counts differ in number", `names for`, func(s map[string]any) {
			n, _ := pairs(s)
			s["count_names"] = n[1:]
		}},
	} {
		if _, err := restore(tc.edit); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.wantErr)
		}
	}
}

func equalInts(a, b []int64) bool { return slices.Equal(a, b) }

// setCitationAccuracy sets citation accuracy's counters as its check does:
// accurate counts only an eligible answer.
// setRanking gives o random ranking metrics, as the ranking check sets
// them.
func setRanking(rng *rand.Rand, nk int, o *Observation) {
	o.Counters.Set(CountRanked)
	o.HitAtK = uint32(rng.IntN(1 << nk))
	o.Means = o.Means[:0]
	for range MeansLen(nk) {
		o.Means = append(o.Means, rng.Float64())
	}
}

func setCitationAccuracy(o *Observation, eligible, accurate bool) {
	o.Counters &^= 1<<CountCitationAccEligible | 1<<CountCitationAccurate
	if eligible {
		o.Counters.Set(CountCitationAccEligible)
		if accurate {
			o.Counters.Set(CountCitationAccurate)
		}
	}
}

// randomCheckpoint is a Cumulative of 500 random observations (seeded by
// seed) and its checkpoint.
func randomCheckpoint(t *testing.T, ks []int, seed uint64) (*Cumulative, []byte) {
	t.Helper()
	cu := NewCumulative(ks, 3)
	rng := rand.New(rand.NewPCG(seed, seed+1))
	var o Observation
	for range 500 {
		randomObservation(rng, len(ks), &o)
		if err := cu.Add(&o); err != nil {
			t.Fatal(err)
		}
	}
	data, err := json.Marshal(cu)
	if err != nil {
		t.Fatal(err)
	}
	return cu, data
}

// restoreEdited restores a Cumulative of the cut-offs ks from checkpoint
// data after edit changed its JSON object, numbers kept as written (the
// sums are 64-bit words).
func restoreEdited(t *testing.T, ks []int, data []byte, edit func(s map[string]any)) (*Cumulative, error) {
	t.Helper()
	var s map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil {
		t.Fatal(err)
	}
	edit(s)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	got := NewCumulative(ks, 3)
	return got, json.Unmarshal(b, got)
}

// A checkpoint keeps its sums by name as well: one written before the
// ranking metrics (the P@k and R@k sums alone, unnamed) restores them
// with the ranking sums at 0, reordered names restore the same sums, and
// a sum this build does not keep is refused.
func TestCheckpointSumsByName(t *testing.T) {
	ks := []int{1, 3, 5, 10}
	cu, data := randomCheckpoint(t, ks, 9)
	want := slices.Clone(cu.c.sums)
	names := cu.l.sumNames(ks)
	if len(names) != len(want) || names[0] != "mean_precision_at_1" || names[len(names)-1] != "r_precision" {
		t.Fatalf("sum names %v", names)
	}
	for i, v := range want {
		if v == (fixedSum{}) {
			t.Fatalf("the test needs every sum non-zero: %s is 0", names[i])
		}
	}
	restore := func(edit func(s map[string]any)) (*Cumulative, error) { return restoreEdited(t, ks, data, edit) }
	got, err := restore(func(map[string]any) {})
	if err != nil || !slices.Equal(got.c.sums, want) {
		t.Fatalf("as written: %v, sums %v, want %v", err, got.c.sums, want)
	}
	got, err = restore(func(s map[string]any) {
		n, v := s["sum_names"].([]any), s["sums"].([]any)
		slices.Reverse(n)
		slices.Reverse(v)
	})
	if err != nil || !slices.Equal(got.c.sums, want) {
		t.Fatalf("reordered: %v, sums %v, want %v", err, got.c.sums, want)
	}
	// An older build's checkpoint: Σ P@k and Σ R@k, no names.
	got, err = restore(func(s map[string]any) {
		delete(s, "sum_names")
		s["sums"] = s["sums"].([]any)[:2*len(ks)]
	})
	if err != nil {
		t.Fatalf("older checkpoint: %v", err)
	}
	for i, v := range got.c.sums {
		if w := want[i]; i < 2*len(ks) && v != w || i >= 2*len(ks) && v != (fixedSum{}) {
			t.Fatalf("older checkpoint: sum %s is %v, want %v (0 past P@k and R@k)", names[i], v, w)
		}
	}
	got, err = restore(func(s map[string]any) { delete(s, "sum_names") })
	if err != nil || !slices.Equal(got.c.sums, want) {
		t.Fatalf("by position: %v, sums %v, want %v", err, got.c.sums, want)
	}
	_, err = restore(func(s map[string]any) {
		s["sum_names"], s["sums"] = append(s["sum_names"].([]any), "ndcg_at_7"), append(s["sums"].([]any), []any{0, 1})
	})
	if err == nil || !strings.Contains(err.Error(), `sum "ndcg_at_7" is not one this build keeps`) {
		t.Errorf("unknown sum: error %v", err)
	}
}
