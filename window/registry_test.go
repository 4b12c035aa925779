package window

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// The names, kinds and directions the windows have always reported: the
// registry keeps them.
func TestRegistryKeepsNames(t *testing.T) {
	want := []string{
		"precision", "chr", "under_refusal", "over_refusal",
		"recall_at_1", "mean_precision_at_1", "mean_recall_at_1", "ndcg_at_1", "map_at_1", "hit_at_1",
		"recall_at_3", "mean_precision_at_3", "mean_recall_at_3", "ndcg_at_3", "map_at_3", "hit_at_3",
		"mrr", "r_precision",
		"coverage", "citation_accuracy", "anchor_proximity",
		"delta_s_median", "delta_s_p90", "delta_s_retrieved_median", "delta_s_retrieved_p90",
		"lambda_convergence", "lambda_flip_rate", "agreement", "kappa", "abstain_rate",
		"triage_ok", "triage_retrieval_drift", "triage_generation_drift", "triage_refusal_ok", "triage_refusal_suspect",
	}
	if got := MetricNames([]int{1, 3}); !slices.Equal(got, want) {
		t.Errorf("MetricNames([1 3]) =\n%v\nwant\n%v", got, want)
	}
	kinds := map[string]Kind{"anchor_proximity": Distance, "kappa": Kappa}
	for _, name := range []string{"mean_precision_at_1", "mean_recall_at_1", "mean_precision_at_3", "mean_recall_at_3",
		"ndcg_at_1", "map_at_1", "ndcg_at_3", "map_at_3", "mrr", "r_precision"} {
		kinds[name] = Mean
	}
	for _, name := range []string{"delta_s_median", "delta_s_p90", "delta_s_retrieved_median", "delta_s_retrieved_p90"} {
		kinds[name] = Quantile
	}
	lower := []string{
		"under_refusal", "over_refusal", "anchor_proximity",
		"delta_s_median", "delta_s_p90", "delta_s_retrieved_median", "delta_s_retrieved_p90",
		"lambda_flip_rate", "abstain_rate",
		"triage_retrieval_drift", "triage_generation_drift", "triage_refusal_suspect",
	}
	for _, name := range want {
		kind := Proportion
		if k, ok := kinds[name]; ok {
			kind = k
		}
		if got, ok := MetricKind(name, []int{1, 3}); !ok || got != kind {
			t.Errorf("MetricKind(%q) = %v, %v; want %v", name, got, ok, kind)
		}
		if got := KindOf(name); got != kind {
			t.Errorf("KindOf(%q) = %v, want %v", name, got, kind)
		}
		if got := LowerIsBetter(name); got != slices.Contains(lower, name) {
			t.Errorf("LowerIsBetter(%q) = %v", name, got)
		}
	}
	for _, name := range []string{"", "recall_at_", "recall_at_5", "recall_at_05", "recall_at_+3", "recall_at_0", "triage_", "triage_bogus", "precison", "delta_s"} {
		if _, ok := MetricKind(name, []int{1, 3}); ok {
			t.Errorf("MetricKind(%q) known with k [1 3]", name)
		}
	}
	for name, kind := range map[string]Kind{"recall_at_7": Proportion, "mean_precision_at_12": Mean, "recall_at_07": 0, "recall_at_0": 0, "recall_at_-1": 0, "nope": 0} {
		if got := KindOf(name); got != kind {
			t.Errorf("KindOf(%q) = %v, want %v", name, got, kind)
		}
	}
}

// Every row says all its kind needs, and every reported name leads back
// to its row, k and label.
func TestRegistryRows(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Expand([]int{1, 5, 10, 32}) {
		if seen[s.Name] {
			t.Errorf("%s reported twice", s.Name)
		}
		seen[s.Name] = true
		got, ok := Lookup(s.Name)
		if !ok || got.Row.Name != s.Row.Name || got.K != s.K || got.Label != s.Label || got.Kind != s.Kind || got.LowerIsBetter != s.LowerIsBetter {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v", s.Name, got, ok, s)
		}
	}
	for _, m := range Registry() {
		switch m.Kind {
		case Proportion:
			if m.sum != 0 || m.sketch != 0 {
				t.Errorf("%s: a proportion has a sum or sketch", m.Pattern())
			}
			if m.num == m.den {
				t.Errorf("%s: numerator and denominator are both %d", m.Pattern(), m.num)
			}
		case Mean:
			if m.sum == 0 || m.Over == PerTriageLabel || sumRows[m.sum] == nil || sumRows[m.sum].Name != m.Name {
				t.Errorf("%s: a mean needs a sum block of its own, per k or once", m.Pattern())
			}
		case Distance:
			if m.num != cAnchorSum {
				t.Errorf("%s: a distance needs a total", m.Pattern())
			}
		case Quantile:
			if m.sketch == 0 || !(m.q > 0 && m.q < 1) {
				t.Errorf("%s: a quantile needs a sketch and a q in (0, 1)", m.Pattern())
			}
		case Kappa:
			if m.den != cPairsJudged {
				t.Errorf("%s: κ is of the judgement pairs", m.Pattern())
			}
		default:
			t.Errorf("%s: kind %d", m.Pattern(), m.Kind)
		}
		for _, c := range []Counter{m.num, m.den} {
			if (c == cRecallStrict || c == cHitAtK) && m.Over != PerK || c == cTriageLabel && m.Over != PerTriageLabel {
				t.Errorf("%s: counter block %d on a row over %d", m.Pattern(), c, m.Over)
			}
		}
		if m.den == cAnchorSum || m.num == cAnchorSum && m.Kind != Distance {
			t.Errorf("%s: the anchor total is a distance's numerator only", m.Pattern())
		}
		for _, l := range m.lowerLabels {
			if m.Over != PerTriageLabel || !slices.Contains(TriageLabels, l) {
				t.Errorf("%s: lower-is-better label %q", m.Pattern(), l)
			}
		}
		if m.untraced && !m.PerEvent() {
			t.Errorf("%s: untraced, but no span event would name it anyway", m.Pattern())
		}
		if m.Denominator == "" || (m.Definition == "") != (m.Over == PerTriageLabel) {
			t.Errorf("%s: glossary text %q, %q", m.Pattern(), m.Definition, m.Denominator)
		}
		if m.Over == PerK && !strings.Contains(m.Definition, "<k>") {
			t.Errorf("%s: the definition does not say where its k goes: %q", m.Pattern(), m.Definition)
		}
		if m.Over != PerK && strings.Contains(m.Definition+m.Denominator, "<k>") {
			t.Errorf("%s: <k> in the glossary text of a row with no k", m.Pattern())
		}
		if m.Over == PerTriageLabel {
			for _, l := range TriageLabels {
				if m.LabelDefinitions[l] == "" {
					t.Errorf("%s: no definition for %s", m.Pattern(), l)
				}
			}
		}
		if len(m.LabelDefinitions) != 0 && (m.Over != PerTriageLabel || len(m.LabelDefinitions) != len(TriageLabels)) {
			t.Errorf("%s: label definitions %v", m.Pattern(), m.LabelDefinitions)
		}
	}
}

// The README's metric glossary is the one the registry generates: its
// rows, at the default k, with their kind, direction and glossary text.
func TestGlossaryMatchesRegistry(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := RefreshGlossary(readme)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if bytes.Equal(readme, want) {
		return
	}
	got, wantLines := strings.Split(string(readme), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(got), len(wantLines)) {
		if got[i] != wantLines[i] {
			t.Fatalf("README.md's metric glossary is not the registry's; run go generate ./window\nline %d:\n%s\nthe registry gives:\n%s", i+1, got[i], wantLines[i])
		}
	}
	t.Fatal("README.md's metric glossary is not the registry's; run go generate ./window")
}

// RefreshGlossary rewrites only what lies between the markers, and
// refuses a README without them.
func TestRefreshGlossary(t *testing.T) {
	readme := "# x\n\n" + glossaryBegin + "| stale |\n" + glossaryEnd + "\nafter\n"
	got, err := RefreshGlossary([]byte(readme))
	if err != nil {
		t.Fatal(err)
	}
	want := "# x\n\n" + glossaryBegin + string(glossaryTable(DefaultKs)) + glossaryEnd + "\nafter\n"
	if string(got) != want {
		t.Errorf("RefreshGlossary:\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(want, "\n| recall_at_10 | proportion | higher is better | strict recall: scored events whose R_10 holds all of G (true for empty G) |") {
		t.Errorf("the table does not spell out recall_at_10:\n%s", want)
	}
	for _, bad := range []string{"# x\n", "# x\n" + glossaryBegin + "| a |\n", "# x\n" + glossaryEnd + glossaryBegin} {
		if _, err := RefreshGlossary([]byte(bad)); err == nil {
			t.Errorf("RefreshGlossary(%q): no error", bad)
		}
	}
}

// EventCounts keep exactly the numerators and denominators of the
// windows' per-event proportions, which are the ones Prometheus exports.
func TestEventCountsMatchWindow(t *testing.T) {
	ks := []int{1, 3, 5, 10}
	w := newWindows(t, Config{Ks: ks})
	ec, half := NewEventCounts(ks), NewEventCounts(ks)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(5, 6))
	var o Observation
	for i := range 3000 {
		randomObservation(rng, len(ks), &o)
		o.Time = now
		mustAdd(t, w, &o, now)
		if i%2 == 0 {
			ec.Add(&o)
		} else {
			half.Add(&o)
		}
	}
	ec.Merge(half)
	m := snapshot(t, w, DefaultArm, "5m", "", now)
	var names []string
	for p := range ec.Proportions() {
		names = append(names, p.Name)
		v := m[p.Name]
		if p.Den != v.Samples || float64(p.Num) != v.Num || p.Kind != Proportion {
			t.Errorf("%s: %d/%d counted, window %v/%v of %d", p.Name, p.Num, p.Den, v.Num, v.Den, v.Samples)
		}
		if p.Den == 0 {
			t.Errorf("%s: no observation in its denominator; the test covers nothing", p.Name)
		}
	}
	want := []string{
		"precision", "chr", "under_refusal", "over_refusal", "recall_at_1", "hit_at_1", "recall_at_3", "hit_at_3",
		"recall_at_5", "hit_at_5", "recall_at_10", "hit_at_10", "coverage", "citation_accuracy", "triage_ok", "triage_retrieval_drift", "triage_generation_drift", "triage_refusal_ok", "triage_refusal_suspect",
	}
	if !slices.Equal(names, want) {
		t.Errorf("per-event proportions %v, want %v", names, want)
	}
}

// The counts countEvent adds and the list Prepare makes of them agree, and
// the list fits Prepared.
func TestEventIncsMatchCountEvent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, nk := range []int{1, 4, 32} {
		l := newLayout(nk)
		var o Observation
		for i := range 2000 {
			randomObservation(rng, min(nk, 20), &o)
			if i == 0 { // every counter at once
				o.HasAnswer, o.Answerable, o.Shipped, o.Hit, o.Contained = true, true, true, true, true
				o.HasRetrieval, o.HasRecallAtK, o.RecallStrict = true, true, 1<<nk-1
				setRanking(rng, nk, &o)
				o.HitAtK = 1<<nk - 1
				o.CoverageEligible, o.Covered = true, true
				setCitationAccuracy(&o, true, true)
				o.HasAnchorDistance, o.Triage = true, 0
			}
			direct := make([]int64, l.nCnt)
			countEvent(direct, &l, &o)
			var p Prepared
			listed := make([]int64, l.nCnt)
			n := eventIncs(p.inc[:], &l, &o)
			for _, j := range p.inc[:n] {
				listed[j]++
			}
			if o.HasAnchorDistance {
				listed[cAnchorSum] += int64(o.AnchorDistance)
			}
			if !slices.Equal(direct, listed) {
				t.Fatalf("k %d, %+v: countEvent %v, eventIncs %v", nk, o, direct, listed)
			}
		}
	}
}

// Observation.Counters holds only the counters no field implies: one the
// fields imply would be counted twice.
func TestObservationCountersChecked(t *testing.T) {
	w := newWindows(t, Config{})
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, c := range []Counter{CountShipped, CountTriaged, cAnchorSum, numEventCounters} {
		o := Observation{Time: now, Triage: -1}
		o.Counters.Set(c)
		if err := w.Add(&o, now); !errors.Is(err, ErrInvalid) {
			t.Errorf("Counters holding %d: %v, want ErrInvalid", c, err)
		}
	}
}
