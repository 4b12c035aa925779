package analysissim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/gates"
)

// Kayenta's NetflixACAJudge, from spinnaker/kayenta (kayenta-judge:
// NetflixACAJudge.scala, classifiers/metric/MannWhitneyClassifier.scala,
// scorers/WeightedSumScorer.scala, classifiers/score/
// ThresholdScoreClassifier.scala; kayenta-mannwhitney: MannWhitney.scala):
//
//   - each metric compares the canary's data points (experiment) with the
//     baseline's (control): a two-sided Mann-Whitney confidence interval
//     for the location shift at 98 %, normal approximation with continuity
//     and tie corrections, and its Hodges-Lehmann estimate;
//   - High when the interval's lower end exceeds 0.25·|estimate| and the
//     effect size (mean ratio canary/baseline) is at least allowedIncrease;
//     Low symmetrically with allowedDecrease; each only in the metric's
//     configured direction; else Pass. Identical data, or a single distinct
//     value over both arms, Pass; no data, Nodata;
//   - a critical metric classified High or Low scores the canary 0;
//   - score = 100 × Pass / (Pass + High + Low) over one group, 0 when half
//     the metrics or more have no data; pass at ≥ 95, marginal at ≥ 75,
//     fail below (the documented defaults).

const (
	kayentaConf      = 0.98
	kayentaTolerance = 0.25 // of the Hodges-Lehmann estimate
	kayentaPass      = 95.0
	kayentaMarginal  = 75.0
)

type mwLabel int

const (
	mwPass mwLabel = iota
	mwHigh
	mwLow
	mwNodata
	mwError // Kayenta's "Metric Classification Failed": counted nowhere
)

// kayentaMetric is one metric of the canary config.
type kayentaMetric struct {
	index                            int  // into seriesMetrics
	increaseFails                    bool // direction "increase", else "decrease"
	critical                         bool
	allowedIncrease, allowedDecrease float64 // effect size (mean ratio) thresholds
}

// wilcoxonDiff is MannWhitney.wilcoxonDiff: the standardized rank-sum
// statistic of x − mu against y, minus quantile. xs and ys are sorted.
func wilcoxonDiff(mu, quantile float64, xs, ys []float64) (float64, bool) {
	n, m := len(xs), len(ys)
	i, j, rank := 0, 0, 0
	rx, ties := 0.0, 0.0
	for i < n || j < m {
		// the next value and how many of each sample equal it
		var v float64
		switch {
		case j >= m || i < n && xs[i]-mu < ys[j]:
			v = xs[i] - mu
		default:
			v = ys[j]
		}
		cx, cy := 0, 0
		for i < n && xs[i]-mu == v {
			i++
			cx++
		}
		for j < m && ys[j] == v {
			j++
			cy++
		}
		t := cx + cy
		avg := float64(rank) + float64(t+1)/2
		rank += t
		rx += float64(cx) * avg
		if t > 1 {
			ft := float64(t)
			ties += ft*ft*ft - ft
		}
	}
	fx, fy := float64(n), float64(m)
	dz := rx - fx*(fx+1)/2 - fx*fy/2
	corr := 0.0
	if dz > 0 {
		corr = 0.5
	} else if dz < 0 {
		corr = -0.5
	}
	sigma := math.Sqrt(fx * fy / 12 * ((fx + fy + 1) - ties/((fx+fy)*(fx+fy-1))))
	if sigma == 0 {
		return 0, false
	}
	return (dz-corr)/sigma - quantile, true
}

// mannWhitney is MannWhitney.mannWhitneyUTest(x, y, conf): the confidence
// interval of the shift x − y and the Hodges-Lehmann estimate. xs and ys
// are sorted; false when every value is tied.
func mannWhitney(xs, ys []float64, conf float64) (lo, hi, est float64, ok bool) {
	muMin, muMax := xs[0]-ys[len(ys)-1], xs[len(xs)-1]-ys[0]
	f := func(mu, q float64) float64 {
		v, good := wilcoxonDiff(mu, q, xs, ys)
		ok = ok && good
		return v
	}
	ok = true
	// f decreases in mu; the root by bisection where Kayenta uses Brent.
	root := func(q float64, clamp bool) float64 {
		fl, fu := f(muMin, q), f(muMax, q)
		if clamp && fl <= 0 {
			return muMin
		}
		if clamp && fu >= 0 {
			return muMax
		}
		a, b := muMin, muMax
		for range 100 {
			mid := (a + b) / 2
			if f(mid, q) > 0 {
				a = mid
			} else {
				b = mid
			}
			if b-a <= 1e-12*max(1, math.Abs(a)+math.Abs(b)) {
				break
			}
		}
		return (a + b) / 2
	}
	z := gates.NormalQuantile((1 - conf) / 2) // negative
	lo, hi = root(-z, true), root(z, true)
	est = root(0, false)
	return lo, hi, est, ok
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func distinct(xs []float64) int {
	n := 0
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			n++
		}
	}
	return n
}

// classify is MannWhitneyClassifier.classify; exp and ctl are sorted
// (their order does not matter to Kayenta).
func (k kayentaMetric) classify(ctl, exp []float64, rng *rand.Rand) (mwLabel, bool) {
	if len(exp) == 0 || len(ctl) == 0 {
		return mwNodata, k.critical
	}
	if slices.Equal(exp, ctl) {
		return mwPass, false
	}
	if distinct(exp) == 1 && distinct(ctl) == 1 {
		if exp[0] == ctl[0] {
			return mwPass, false
		}
		// Kayenta breaks the ties with Gaussian noise of 1e-5 of the value.
		exp, ctl = noisy(exp, rng), noisy(ctl, rng)
	}
	lo, hi, est, ok := mannWhitney(exp, ctl, kayentaConf)
	if !ok {
		return mwError, false
	}
	bound := kayentaTolerance * math.Abs(est)
	effect := math.NaN()
	if me, mc := mean(exp), mean(ctl); me != 0 && mc != 0 {
		effect = me / mc
	}
	switch {
	case k.increaseFails && lo > bound && (math.IsNaN(effect) || effect >= k.allowedIncrease):
		return mwHigh, k.critical
	case !k.increaseFails && hi < -bound && (math.IsNaN(effect) || effect <= k.allowedDecrease):
		return mwLow, k.critical
	}
	return mwPass, false
}

func noisy(xs []float64, rng *rand.Rand) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = x + rng.NormFloat64()*x*1e-5
	}
	slices.Sort(out)
	return out
}

// kayentaScore is WeightedSumScorer.score for one group of metrics.
func kayentaScore(labels []mwLabel, critical bool) float64 {
	if critical {
		return 0
	}
	var pass, counted, nodata int
	for _, l := range labels {
		switch l {
		case mwPass:
			pass++
			counted++
		case mwHigh, mwLow:
			counted++
		case mwNodata:
			nodata++
		}
	}
	if float64(nodata)/float64(len(labels))*100 >= 50 {
		return 0
	}
	if counted == 0 {
		return 100 // a group with no data scores 100
	}
	return math.Round(float64(pass)/float64(counted)*100*100) / 100
}

// kayentaVerdict is how Spinnaker acts on a run's score: pass at or
// above the pass threshold, and Orca ends the canary when the score is not
// above marginal (MonitorKayentaCanaryTask); in between it goes on.
func kayentaVerdict(score float64) Verdict {
	switch {
	case score >= kayentaPass:
		return Pass
	case score > kayentaMarginal:
		return Inconclusive
	}
	return Fail
}

// kayentaJudge runs NetflixACAJudge every interval over all the 1-minute
// data points since the canary started (a growing lookback).
type kayentaJudge struct {
	metrics  []kayentaMetric
	interval int // minutes
	rng      *rand.Rand
	buf      [2][]float64
	labels   []mwLabel
}

func (k *kayentaJudge) judge(canary, live *series, minutes int) Verdict {
	k.labels = k.labels[:0]
	crit := false
	for _, m := range k.metrics {
		exp := canary.column(m.index, minutes, k.buf[0])
		ctl := live.column(m.index, minutes, k.buf[1])
		slices.Sort(exp)
		slices.Sort(ctl)
		k.buf[0], k.buf[1] = exp, ctl
		l, c := m.classify(ctl, exp, k.rng)
		k.labels = append(k.labels, l)
		crit = crit || c
	}
	return kayentaVerdict(kayentaScore(k.labels, crit))
}

// FormatKayenta renders the Kayenta canary config KayentaMetrics makes.
func FormatKayenta(cfg config.Config) string {
	var b strings.Builder
	b.WriteString("| metric | direction | critical | allowed effect (mean ratio) |\n|---|---|---|---:|\n")
	for _, m := range KayentaMetrics(cfg) {
		dir, effect := "decrease", fmt.Sprintf("≥ %.4f", m.allowedDecrease)
		if m.increaseFails {
			dir, effect = "increase", fmt.Sprintf("≤ %.4f", m.allowedIncrease)
		}
		fmt.Fprintf(&b, "| %s | %s | %v | %s |\n", seriesMetrics[m.index], dir, m.critical, effect)
	}
	fmt.Fprintf(&b, "\nMann-Whitney at %g, tolerance %g × |Hodges-Lehmann|, one group of equal weight, pass ≥ %g, marginal ≥ %g, 1-minute points, a run every %d min over all points since the start\n",
		kayentaConf, kayentaTolerance, kayentaPass, kayentaMarginal, KayentaInterval)
	return b.String()
}
