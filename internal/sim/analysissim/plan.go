package analysissim

import (
	"fmt"
	"math"
	"strings"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis/confseq"
)

// The tuning constants of sidecar/analysis/judge.go only move where a
// boundary is tightest (confseq.Tuned). PlanSensitivity shows, with the
// same confseq code the analysis runs, how many canary events a healthy
// arm's interval needs to narrow enough to pass or fail, for boundaries
// tuned at multiples of the shipped choices: comparisons at c ×
// PlannedInformation(level, tolerance), quantiles at quantilePlanN values.
// The variances are those of the healthy traffic model, the levels the
// shipped ones: a check's passing side at α, its failing side at α/m, each
// halved for the unpaired sequence of a paired metric (the paired one
// takes the other half), each arm's quantile bound at a quarter.

// PlanSensitivity renders the table for traffic tr and cfg's canary set.
func PlanSensitivity(cfg config.Config, tr Traffic) string {
	lv := healthyLevels(cfg)
	checks := cfg.Analysis.Checks[config.CanaryCheckSet]
	passLevel := cfg.Analysis.Alpha / 2
	failLevel := cfg.Analysis.Alpha / float64(len(checks)) / 2
	ratio := tr.CanaryRate / tr.LiveRate
	// per-sample variance and samples per event of a metric
	type unit struct{ v, share float64 }
	prop := func(m string) unit {
		p := lv[m]
		return unit{p * (1 - p), lv["share:"+m]}
	}
	po, k := lv["agreement"], lv["kappa"]
	pe := (po - k) / (1 - k)
	kappa := unit{po * (1 - po) / ((1 - pe) * (1 - pe)), lv["share:kappa"]}
	// events until a difference's radius is at most r
	eventsFor := func(b confseq.Boundary, u unit, r float64) float64 {
		lo, hi := 10.0, 1e8
		for hi/lo > 1.001 {
			n := math.Sqrt(lo * hi)
			v := u.v/(u.share*n) + u.v/(u.share*n/ratio)
			if confseq.Diff(b, v) <= r {
				hi = n
			} else {
				lo = n
			}
		}
		return hi
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Comparisons (unpaired sequence at %.2g on the passing side, %.2g on the failing side; tolerance 0.02): canary events until the interval's radius allows\n\n", passLevel, failLevel)
	b.WriteString("| planned information | precision pass (r ≤ 0.02) | precision −5 pts fail (r ≤ 0.03) | precision −10 pts fail (r ≤ 0.08) | under_refusal pass | agreement pass | kappa pass |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range []float64{0.25, 0.5, 1, 2, 4} {
		pass := confseq.Tuned(passLevel, c*confseq.PlannedInformation(passLevel, 0.02))
		fail := confseq.Tuned(failLevel, c*confseq.PlannedInformation(failLevel, 0.02))
		label := fmt.Sprintf("%g × (z/t)²", c)
		if c == 1 {
			label += " (shipped)"
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", label,
			eventsFor(pass, prop("precision"), 0.02), eventsFor(fail, prop("precision"), 0.03), eventsFor(fail, prop("precision"), 0.08),
			eventsFor(pass, prop("under_refusal"), 0.02), eventsFor(pass, prop("agreement"), 0.02), eventsFor(pass, kappa, 0.02))
	}
	// Quantiles: the half-width of a difference of p-quantiles, each arm's
	// rank radius at a quarter of the side's level turned into ΔS by the
	// density at the quantile.
	dens := func(q, med, p90 float64) float64 {
		mu := math.Log(med / (1 - med))
		sigma := (math.Log(p90/(1-p90)) - mu) / 1.2815515655446004
		z := confseq.ZQuantile(q)
		x := 1 / (1 + math.Exp(-(mu + sigma*z)))
		return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) / (sigma * x * (1 - x))
	}
	h := Scenarios()[0].Canary
	worse := Scenarios()[4].Canary
	share := lv["share:delta_s_p90"]
	halfWidth := func(b confseq.Boundary, n, p, fc, fb float64) float64 {
		nc, nb := n*share, n*share/ratio
		return b.Radius(nc*p*(1-p))/nc/fc + b.Radius(nb*p*(1-p))/nb/fb
	}
	qEvents := func(b confseq.Boundary, p, fc, fb, r float64) float64 {
		lo, hi := 10.0, 1e8
		for hi/lo > 1.001 {
			n := math.Sqrt(lo * hi)
			if halfWidth(b, n, p, fc, fb) <= r {
				hi = n
			} else {
				lo = n
			}
		}
		return hi
	}
	f90, f50 := dens(0.9, h.DeltaSMedian, h.DeltaSP90), dens(0.5, h.DeltaSMedian, h.DeltaSP90)
	f90w := dens(0.9, worse.DeltaSMedian, worse.DeltaSP90)
	fmt.Fprintf(&b, "\nQuantiles (unpaired, each arm at %.2g on the passing side, %.2g on the failing side): canary events until the difference's half-width allows\n\n", passLevel/2, failLevel/2)
	b.WriteString("| quantilePlanN | delta_s_p90 pass (≤ 0.02) | delta_s_p90 +0.05 fail (≤ 0.03) | delta_s_median pass (≤ 0.02) |\n|---:|---:|---:|---:|\n")
	for _, n := range []float64{1000, 2000, 4000, 8000, 16000} {
		b9, b5 := confseq.Tuned(passLevel/2, n*0.09), confseq.Tuned(passLevel/2, n*0.25)
		b9f := confseq.Tuned(failLevel/2, n*0.09)
		label := fmt.Sprintf("%.0f", n)
		if n == 4000 {
			label += " (shipped)"
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f |\n", label,
			qEvents(b9, 0.9, f90, f90, 0.02), qEvents(b9f, 0.9, f90w, f90, 0.03), qEvents(b5, 0.5, f50, f50, 0.02))
	}
	return b.String()
}
