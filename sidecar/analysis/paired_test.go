package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/window"
)

// coverageWorld is a stream model for the coverage of the paired
// comparisons: each question has its own chance of being answered at all
// (shipped) and of being right, drawn so that most questions are almost
// always one or the other, as real pipelines behave; the candidate answers
// some questions worse by its own draw.
type coverageWorld struct {
	ship, right [2][]float64 // [arm][question]
	// truth is each arm's expected precision (right over shipped) and
	// recall_at_5 (right over all): what the stream measures in the long
	// run, questions being asked uniformly.
	precision, recall [2]float64
}

func newCoverageWorld(rng *rand.Rand, questions int, worse float64) *coverageWorld {
	w := &coverageWorld{}
	for a := range 2 {
		w.ship[a] = make([]float64, questions)
		w.right[a] = make([]float64, questions)
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
		w.ship[0][q], w.right[0][q] = s, r
		w.ship[1][q], w.right[1][q] = s, r
		if rng.Float64() < worse {
			w.right[0][q] = r * 0.2
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
		HasRetrieval: true, PrecisionAtK: o.PrecisionAtK[:0]}
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
// on a side at some read in at most α/m of the runs. α is set high (0.6,
// m = 2 checks: 0.3 a check) so that misses happen at all and the rate
// can be seen; recall_at_5's pairs are exact, precision's are linearised.
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
	const alpha = 0.6
	cfg := config.Default().Analysis
	cfg.Alpha = alpha
	cfg.Checks = map[string][]config.AnalysisCheck{"c": {
		{Name: "precision", Metric: "precision", Tolerance: 0.02, MinSamples: 100},
		{Name: "recall_at_5", Metric: "recall_at_5", Tolerance: 0.02, MinSamples: 100},
	}}
	perCheck := alpha / 2
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
			truth := map[string]float64{"precision": w.precision[0] - w.precision[1], "recall_at_5": w.recall[0] - w.recall[1]}
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
		t.Logf("%s: components: lo %v hi %v", c.name, missLo, missHi)
		t.Logf("%s: pairs %.0f of %.0f candidate events; missed from below (precision, recall_at_5): %d, %d; from above: %d, %d, of %d runs (each at most %.2f)",
			c.name, pairs/float64(runs), events/float64(runs), missLo["precision"], missLo["recall_at_5"], missHi["precision"], missHi["recall_at_5"], runs, perCheck)
		for _, metric := range []string{"precision", "recall_at_5"} {
			for side, k := range map[string]int{"lower bound above the truth": missLo[metric], "upper bound below the truth": missHi[metric]} {
				// Allow binomial noise: three standard deviations.
				limit := perCheck + 3*math.Sqrt(perCheck*(1-perCheck)/float64(runs))
				if rate := float64(k) / float64(runs); rate > limit {
					t.Errorf("%s: %s: %s in %d of %d runs (%.3f > %.3f)", c.name, metric, side, k, runs, rate, limit)
				}
			}
		}
	}
}
