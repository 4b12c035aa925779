// Package confseq computes the anytime-valid confidence sequences that canary
// analyses judge (SPEC §5.2): bounds that hold at every sample size at once,
// so a verdict may be read as often as anyone likes without spending more
// than its error budget.
//
// Every bound here comes from one boundary: the one-sided normal-mixture
// boundary of Howard, Ramdas, McAuliffe and Sekhon (Time-uniform,
// nonparametric, nonasymptotic confidence sequences, Ann. Statist. 2021,
// §3.2 and Proposition 6). For a process S with intrinsic time V (the sum
// of its increments' variances), mixing the exponential supermartingales
// exp(λS − λ²V/2) over a half-normal λ of precision ρ gives
//
//	M(s, v) = 2·sqrt(ρ/(v+ρ)) · exp(s²/(2(v+ρ))) · Φ(s/sqrt(v+ρ)),
//
// and by Ville's inequality P(∃t: M(S_t, V_t) ≥ 1/α) ≤ α. The radius
// u(v) solving M(u, v) = 1/α is therefore crossed by S at any time with
// probability at most α: exactly so for Gaussian increments, and
// asymptotically for sums of bounded variables with their variance
// estimated (Waudby-Smith, Arbour, Sinha, Kennedy, Ramdas, Time-uniform
// central limit theory and asymptotic confidence sequences, 2021). That is
// the regime of a canary: thousands of events, proportions away from 0 and
// 1 once min_samples are in.
//
// One-sided rather than two-sided: a check fails only on one side, so the
// bound on that side alone must hold at α/m; the half-normal mixture is
// about as tight as the two-sided one at 2α.
//
// Three uses:
//   - an estimate θ̂ of variance v (a proportion: v = σ̂²/n; a difference of
//     two arms: v = σ̂₁²/n₁ + σ̂₂²/n₂): in the information scale I = 1/v,
//     I·(θ̂ − θ) is a Brownian motion in I (the canonical joint
//     distribution of group-sequential tests, here without a fixed
//     schedule), so θ̂ is within u(I)/I of θ;
//   - a quantile (Howard & Ramdas, Sequential estimation of quantiles,
//     Bernoulli 2022): at the true p-quantile the count of values below it
//     is a Binomial(n, p) sum, S = count − np with V = n·p(1−p), so the
//     quantile lies between the order statistics of ranks np ∓ u(V).
package confseq

import (
	"math"
)

// Boundary is a one-sided normal-mixture boundary at level Alpha, tuned by
// Rho (in units of intrinsic time).
type Boundary struct {
	Alpha float64
	Rho   float64
}

// logM is log M(s, v) of the package documentation.
func (b Boundary) logM(s, v float64) float64 {
	vr := v + b.Rho
	return math.Ln2 + 0.5*math.Log(b.Rho/vr) + s*s/(2*vr) + logPhi(s/math.Sqrt(vr))
}

// logPhi is log Φ(x); erfc keeps the lower tail accurate where 1−Φ would
// cancel.
func logPhi(x float64) float64 { return math.Log(0.5 * math.Erfc(-x/math.Sqrt2)) }

// TwoSidedRadius is Robbins' two-sided normal-mixture radius
// sqrt((v+ρ)·log((v+ρ)/(ρα²))): P(∃t: |S_t| ≥ it) ≤ α. It bounds Radius
// from above.
func (b Boundary) TwoSidedRadius(v float64) float64 {
	vr := v + b.Rho
	return math.Sqrt(vr * math.Log(vr/(b.Rho*b.Alpha*b.Alpha)))
}

// Radius is u(v): the one-sided boundary at intrinsic time v ≥ 0. It is
// found by Newton's method on log M, kept inside a bracket that starts at
// [0, TwoSidedRadius(v)]; a verdict read solves it for every check, so it
// converges in a few steps rather than the fifty of a bisection.
func (b Boundary) Radius(v float64) float64 {
	if !(v >= 0) || math.IsInf(v, 1) {
		return math.Inf(1)
	}
	target := -math.Log(b.Alpha)
	lo, hi := 0.0, b.TwoSidedRadius(v)
	if b.logM(lo, v) >= target {
		return 0
	}
	sd := math.Sqrt(v + b.Rho)
	x := hi
	for range 100 {
		f := b.logM(x, v) - target
		if f < 0 {
			lo = x
		} else {
			hi = x
		}
		if hi-lo <= 1e-12*hi || f == 0 {
			break
		}
		// d/ds log M = s/(v+ρ) + φ(z)/(Φ(z)·sd), z = s/sd.
		z := x / sd
		slope := x/(sd*sd) + math.Exp(-z*z/2-logPhi(z))/(math.Sqrt(2*math.Pi)*sd)
		next := x - f/slope
		if !(next > lo && next < hi) {
			next = (lo + hi) / 2
		} else if math.Abs(next-x) <= 1e-13*x {
			// Converged: hi is the nearest point known to be on or past
			// the boundary, so the radius never errs on the loose side.
			break
		}
		x = next
	}
	return hi
}

// Tuned returns the boundary at level alpha whose radius relative to v,
// u(v)/v, is smallest at intrinsic time v0: the sequence is tightest where
// the decision is expected. Any ρ > 0 gives a valid boundary; ρ only moves
// where it is tight.
func Tuned(alpha, v0 float64) Boundary {
	// Golden-section search on log ρ; the radius at v0 is unimodal in it.
	f := func(logRho float64) float64 {
		return Boundary{Alpha: alpha, Rho: math.Exp(logRho)}.Radius(v0)
	}
	lo, hi := math.Log(v0)-12, math.Log(v0)+4
	const g = 0.6180339887498949
	x1, x2 := hi-g*(hi-lo), lo+g*(hi-lo)
	f1, f2 := f(x1), f(x2)
	for hi-lo > 1e-4 {
		if f1 < f2 {
			hi, x2, f2 = x2, x1, f1
			x1 = hi - g*(hi-lo)
			f1 = f(x1)
		} else {
			lo, x1, f1 = x1, x2, f2
			x2 = lo + g*(hi-lo)
			f2 = f(x2)
		}
	}
	return Boundary{Alpha: alpha, Rho: math.Exp((lo + hi) / 2)}
}

// ZQuantile is the standard normal quantile Φ⁻¹(p), 0 < p < 1.
func ZQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }

// PlannedInformation is the intrinsic time at which a fixed-sample one-sided
// z-bound at level alpha would be within tolerance of its estimate:
// (z₁₋α / tolerance)². Tuning a difference's boundary there makes it tight
// where a healthy candidate can first pass.
func PlannedInformation(alpha, tolerance float64) float64 {
	z := ZQuantile(1 - alpha)
	t := max(tolerance, 1e-3)
	return (z / t) * (z / t)
}

// Interval is a two-sided bound [Lo, Hi]; each side holds at the level of
// the boundary that made it.
type Interval struct{ Lo, Hi float64 }

// Levels are the error levels of an interval's two sides: the lower bound
// errs (lies above the truth) with probability at most Lo, the upper with
// at most Hi. A check's two sides decide different things (one fails it,
// the other passes it), and need not hold at the same level.
type Levels struct{ Lo, Hi float64 }

// Both is the same level on both sides.
func Both(alpha float64) Levels { return Levels{alpha, alpha} }

// Half is half of each level: for one of two sequences intersected.
func (l Levels) Half() Levels { return Levels{l.Lo / 2, l.Hi / 2} }

// smoothedVariance is p̃(1−p̃) with p̃ = (x+½)/(n+1): never 0, so a run of
// all-successes does not claim certainty.
func smoothedVariance(x, n float64) float64 {
	p := (x + 0.5) / (n + 1)
	return p * (1 - p)
}

// Proportion bounds the success probability of a Bernoulli stream with x
// successes in n trials. With n = 0 it is [0, 1].
func Proportion(b Boundary, x, n float64) Interval {
	if n <= 0 {
		return Interval{0, 1}
	}
	p := x / n
	r := Diff(b, smoothedVariance(x, n)/n)
	return Interval{max(0, p-r), min(1, p+r)}
}

// ProportionDiff bounds p₁ − p₂ from x₁ of n₁ and x₂ of n₂. With either n
// 0 it is [−1, 1].
func ProportionDiff(b Boundary, x1, n1, x2, n2 float64) Interval {
	return ProportionDiffClustered(b, x1, n1, 0, x2, n2, 0)
}

// ProportionDiffClustered is ProportionDiff with each estimate's variance
// at least c₁ and c₂: what the events' clusters (visits of one question)
// make of it, when they are not independent draws.
func ProportionDiffClustered(b Boundary, x1, n1, c1, x2, n2, c2 float64) Interval {
	if n1 <= 0 || n2 <= 0 {
		return Interval{-1, 1}
	}
	// Each arm's variance is at least the pooled one: a small arm whose
	// estimate sits near 0 or 1 by chance would otherwise claim too little
	// variance and a too narrow interval on that side.
	pooled := smoothedVariance(x1+x2, n1+n2)
	v := max(max(smoothedVariance(x1, n1), pooled)/n1, c1) + max(max(smoothedVariance(x2, n2), pooled)/n2, c2)
	d := x1/n1 - x2/n2
	r := Diff(b, v)
	return Interval{max(-1, d-r), min(1, d+r)}
}

// Diff is the radius of a difference of two estimates whose variance is v:
// u(1/v)·v.
func Diff(b Boundary, v float64) float64 {
	if !(v > 0) {
		return 0
	}
	return b.Radius(1/v) * v
}

// QuantileRanks returns the ranks, as fractions of n, between whose order
// statistics the p-quantile of a stream of n values lies: p ∓
// u(deff·n·p(1−p))/n. deff ≥ 1 is the design effect of values that come in
// clusters (a visit's runs, which cite alike): with clusters of sizes D_v,
// the count below the quantile moves by at most Σ D_v²·p(1−p) in variance,
// a visit's values being at worst all on one side, so deff = Σ D_v² / Σ D_v
// keeps the bound; 1 for independent values. lo < 0 means no lower bound
// yet, hi > 1 no upper bound.
func QuantileRanks(b Boundary, p, n, deff float64) (lo, hi float64) {
	if n <= 0 {
		return -1, 2
	}
	r := b.Radius(max(deff, 1)*n*p*(1-p)) / n
	return p - r, p + r
}

// KappaVariance is the large-sample variance of Cohen's κ from n pairs with
// observed agreement po and chance agreement pe: po(1−po)/(n(1−pe)²)
// (Cohen 1960), with po smoothed as for proportions.
func KappaVariance(po, pe, n float64) float64 {
	if n <= 0 || pe >= 1 {
		return math.Inf(1)
	}
	v := smoothedVariance(po*n, n)
	return v / (n * (1 - pe) * (1 - pe))
}
