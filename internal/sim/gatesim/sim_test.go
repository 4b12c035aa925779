package gatesim

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/window"
)

// TestSimulation prints how the shipped gates behave on generated traffic.
// By default it runs a quick version (few runs) so that CI stays fast; the
// full one, whose numbers are in BENCHMARKS.md, runs with
//
//	SHADOWEVAL_SIM=1 go test -run TestSimulation -v -timeout 30m ./internal/sim/gatesim
func TestSimulation(t *testing.T) {
	ffRuns, detRuns, horizon := 40, 8, 10*time.Minute
	switch {
	case os.Getenv("SHADOWEVAL_SIM") != "":
		ffRuns, detRuns, horizon = 1000, 200, 30*time.Minute
	case raceEnabled || testing.Short():
		ffRuns, detRuns, horizon = 8, 2, 3*time.Minute
	}
	sc := DefaultScenario
	start := time.Now()
	ff, err := RunFalseFail(ffRuns, 1, sc, Healthy, FalseFailVariants())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("(a) healthy canary = live (precision %.3f, chr %.3f), %g canary + %g live events/s, one %s window, %d runs (%s):\n%s",
		Healthy.CHR*Healthy.Contained, Healthy.CHR, sc.CanaryRate, sc.LiveRate, sc.Window.Name, ffRuns, time.Since(start).Round(time.Millisecond), FormatFalseFail(ff))

	start = time.Now()
	worse := WorsePrecision(Healthy, 0.05)
	det, err := RunDetection(detRuns, 2, sc, Healthy, worse, DetectionVariants(), horizon)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("(b) canary precision %.3f vs live %.3f (all else equal), evaluated every %s, horizon %s, %d runs (%s):\n%s",
		worse.CHR*worse.Contained, Healthy.CHR*Healthy.Contained, sc.EvalEvery, horizon, detRuns, time.Since(start).Round(time.Millisecond), FormatDetection(det, sc.CanaryRate))

	start = time.Now()
	ramp, err := RunDetection(detRuns, 3, sc, Healthy, Healthy, DetectionVariants(), horizon)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("(c) healthy canary = live from its first event, evaluated every %s as in (b), horizon %s, %d runs: wrong fails during the rollout (%s):\n%s",
		sc.EvalEvery, horizon, detRuns, time.Since(start).Round(time.Millisecond), FormatDetection(ramp, sc.CanaryRate))

	// Sanity, loose enough for the quick run.
	point, conf := ff[0], ff[1]
	for gi, name := range point.Gates {
		if conf.Broken[gi] > point.Broken[gi] {
			t.Errorf("%s: confidence fails more often (%d) than the point value (%d)", name, conf.Broken[gi], point.Broken[gi])
		}
		if name == "ship_precision" && point.Broken[gi] != 0 {
			t.Errorf("ship_precision failed %d healthy runs", point.Broken[gi])
		}
	}
	withExtra := det[2]
	for r, x := range withExtra.Events {
		if math.IsInf(x, 1) {
			t.Errorf("run %d: precision vs live never caught a 5-point drop", r)
		}
	}
}

func TestWorsePrecision(t *testing.T) {
	w := WorsePrecision(Healthy, 0.05)
	if d := Healthy.CHR*Healthy.Contained - w.CHR*w.Contained; math.Abs(d-0.05) > 1e-12 || w.CHR != Healthy.CHR {
		t.Errorf("precision drop %v, chr %v", d, w.CHR)
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, math.Inf(1), 3, 2}
	for q, want := range map[float64]float64{0.2: 1, 0.5: 3, 0.8: 5, 0.9: math.Inf(1), 1: math.Inf(1)} {
		if got := Quantile(xs, q); got != want {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("Quantile(nil) not NaN")
	}
}

// The generator reproduces the profile's metric values.
func TestProfileMetrics(t *testing.T) {
	sc := DefaultScenario
	w, err := window.New(window.Config{Windows: []window.Spec{sc.Window}})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	g := NewGenerator(rng, Healthy, 3000, len(window.DefaultKs))
	var o window.Observation
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := traffic(w, g, from, sc.Window.Length, []armTraffic{{"canary", 200, &Healthy}}, &o); err != nil {
		t.Fatal(err)
	}
	snap, ok := w.Snapshot("canary", sc.Window.Name, "", from.Add(sc.Window.Length-1))
	if !ok {
		t.Fatal("no snapshot")
	}
	shipped := 0.85*0.96 + 0.15*0.02
	want := map[string]float64{
		"precision":         0.85 * 0.96 * 0.905 * 0.975 / shipped,
		"chr":               0.85 * 0.96 * 0.905 / shipped,
		"under_refusal":     0.02,
		"over_refusal":      0.04,
		"recall_at_5":       0.90,
		"coverage":          0.86,
		"citation_accuracy": 0.97,
		"delta_s_median":    0.32,
		"delta_s_p90":       0.48,
		"abstain_rate":      0.004,
	}
	for m, x := range want {
		v := snap.Metrics[m]
		if !v.Valid || math.Abs(v.Value-x) > 0.01 {
			t.Errorf("%s = %v (valid %v, n %d), want %v ± 0.01", m, v.Value, v.Valid, v.Samples, x)
		}
	}
	// About 20 runs per qid: a group is convergent when all its runs are →.
	if v, x := snap.Metrics["lambda_convergence"], math.Exp(-20*(1-Healthy.LambdaArrow)); math.Abs(v.Value-x) > 0.02 {
		t.Errorf("lambda_convergence = %v, want %v ± 0.02", v.Value, x)
	}
	for m, lo := range map[string]float64{"agreement": 0.92, "kappa": 0.8} {
		if v := snap.Metrics[m]; !v.Valid || v.Value < lo {
			t.Errorf("%s = %v, want ≥ %v", m, v.Value, lo)
		}
	}
}
