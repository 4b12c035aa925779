package confseq

import (
	"math"
)

// The paired comparisons of SPEC §5.3 judge the mean of bounded paired
// differences with a betting confidence sequence (Waudby-Smith and Ramdas,
// Estimating means of bounded random variables by betting, JRSS-B 2024):
// for a candidate mean μ of values X_i in [lo, hi], the capital
//
//	K_t(μ, λ) = Π_{i≤t} (1 + λ·(X_i − μ))
//
// of a bettor who stakes a fraction λ of it on each X_i exceeding μ is a
// nonnegative martingale when μ is the mean, for every λ in
// [0, 1/(μ − lo)): by Ville's inequality it ever reaches 1/α with
// probability at most α, and so does any average of such capitals over a
// fixed set of λ. The μ at which the average reaches 1/α is the lower
// bound; the upper bound bets the other way.
//
// The λ are fixed in advance (a geometric grid of stakes, averaged with
// equal weights) rather than chosen from the values seen: the capital is
// then a function of how many times each distinct value occurred, so it
// merges across replicas by adding counts, restores from a checkpoint and
// does not depend on the order of the pairs. Where the arms agree on
// almost every pair it narrows like log(1/α)/n, not 1/√n; where they
// disagree it narrows with their variance, as an empirical-Bernstein
// sequence does but without paying for the full range on every
// disagreement.

// stakes are the fractions θ of the largest safe stake bet on: 12 from
// 0.95 down to 0.01, a factor 1.5 apart. A canary's decisions are made
// where the best stake is about the tolerance over the pairs' variance
// (0.05 to 0.9 for a tolerance of 0.02); any stake above 0 keeps the
// sequence valid, the grid only decides where it is tightest, and the
// average pays log 12 for not knowing the best one in advance (measured:
// 5–7 % fewer pairs to a decision than 24 stakes down to 1e-4).
var stakes = func() (s [12]float64) {
	for j := range s {
		s[j] = 0.95 * math.Pow(0.01/0.95, float64(j)/float64(len(s)-1))
	}
	return s
}()

// Values are the distinct values seen and how often each was, with the
// range every value lies in (known before any is seen).
type Values struct {
	X, N   []float64
	Lo, Hi float64
}

// Mean is the sample mean; NaN without values.
func (v *Values) Mean() float64 {
	var n, s float64
	for k, x := range v.X {
		n += v.N[k]
		s += v.N[k] * x
	}
	return s / n
}

// Count is the number of values.
func (v *Values) Count() float64 {
	n := 0.0
	for _, c := range v.N {
		n += c
	}
	return n
}

// BettingMean bounds the mean of v: each side holds at its level of lv
// over every sample size at once. Without values it is [Lo, Hi].
func BettingMean(lv Levels, v Values) Interval {
	return BettingPast(lv, v, Interval{math.Inf(-1), math.Inf(1)})
}

// BettingPast is BettingMean for a reading that needs a side of the
// interval only where it passes past: the lower bound where it lies above
// past.Lo, the upper where it lies below past.Hi (an infinite side: in
// any case). A side that would not pass is left at its end of the range
// (v.Lo or v.Hi), which an intersection with past makes the same, at the
// cost of one evaluation of the capital, or none; a side that would pass
// is searched for from past, where the capital is then known.
func BettingPast(lv Levels, v Values, past Interval) Interval {
	if v.Count() <= 0 || !(v.Hi > v.Lo) {
		return Interval{v.Lo, v.Hi}
	}
	lo := bettingLower(lv.Lo, v.X, v.N, v.Lo, past.Lo)
	// The upper bound is the lower bound of −X.
	neg := make([]float64, len(v.X))
	for k, x := range v.X {
		neg[k] = -x
	}
	hi := -bettingLower(lv.Hi, neg, v.N, -v.Hi, -past.Hi)
	return Interval{lo, hi}
}

// bettingLower is inf{μ : the average capital at μ stays below 1/α} for
// values xs (counts ns) not below lo. The capital falls as μ rises, so
// the bound is where log of the average capital crosses log(1/α): found by
// Halley's method kept inside a bracket, from a start the normal
// approximation suggests. What is returned is always a point at which the
// capital was still at least 1/α, so the bound never errs on the narrow
// side: the end of the last bracket, or the first point from which the
// slope puts the crossing within a quarter of the tolerance. Where past is
// above lo, a bound not above it is lo, and the search starts at past.
func bettingLower(alpha float64, xs, ns []float64, lo, past float64) float64 {
	var n, sum float64
	for k, x := range xs {
		n += ns[k]
		sum += ns[k] * x
	}
	mean := sum / n
	if !(mean > lo) || past >= mean {
		return lo
	}
	var ss float64
	for k, x := range xs {
		ss += ns[k] * (x - mean) * (x - mean)
	}
	target := -math.Log(alpha)
	tol := 1e-9 * (1 + math.Abs(mean))
	// At the mean the capital is at most 1 (Jensen): the bound is below.
	a, b := lo, mean
	guess := mean - math.Sqrt(2*ss*(target+3))/n - (mean-lo)*target/(3*n)
	// Where the values hardly vary, the largest stake alone reaches 1/α
	// about where n·log(1 + θ·(mean − μ)/(μ − lo)) = log(1/α) + log of
	// the number of stakes: the normal approximation, which knows no
	// range, starts too near the mean there.
	r := math.Expm1((target+math.Log(float64(len(stakes))))/n) / stakes[0]
	guess = min(guess, (mean+r*lo)/(1+r))
	x := max(guess, lo+(mean-lo)/64)
	// The capital falls as μ rises: where it is below 1/α at past, the
	// bound is below past.
	from := past > lo
	if from {
		x = past
	}
	// After a point whose average capital is within e^(stakeNear/2) of
	// 1/α, only the stakes near the best there are bet on: one left out
	// only lowers the average, so a point the rest put at or above 1/α is
	// still on the safe side; and one e^stakeNear below the best there is
	// below e^(−stakeNear/2)/α at the crossing, further on, where the
	// average is 1/α: it moves the average by less than a float64 shows.
	use := uint16(1)<<len(stakes) - 1
	for range 100 {
		f, df, d2f, near := logCapital(x, xs, ns, lo, use)
		f -= target
		if f < stakeNear/2 {
			use = near
		}
		if from && f < 0 {
			return lo
		}
		from = false
		if f >= 0 && df < 0 && -f/df <= tol/4 {
			// The crossing is within a quarter of tol above x, by the
			// slope: x is the bound, and no step across it is needed.
			return x
		}
		if f >= 0 {
			a = x
		} else {
			b = x
		}
		if b-a <= tol {
			break
		}
		// Halley's step, which the curvature makes cubic where Newton's
		// is quadratic, aimed an eighth of tol short of the crossing so
		// that the next point is most likely on the safe side and close
		// enough to stop at.
		next := x - f/df
		if den := 2*df*df - f*d2f; den > 0 {
			next = x - 2*f*df/den - tol/8
		}
		switch {
		case !(next > a && next < b):
			next = a + (b-a)/2
		case math.Abs(next-x) < tol/4 && f >= 0:
			next = min(x+tol/2, b)
		case math.Abs(next-x) < tol/4:
			next = max(x-tol/2, a)
		}
		x = next
	}
	return a
}

// stakeNear is how far, in log capital, below the best stake a stake may
// be and still be bet on after the first point of a search.
const stakeNear = 50

// logCapital is log of the average over stakes of the capital at μ,
// Σ_k n_k·log(1 + θ·(x_k − μ)/(μ − lo)) for each stake θ of use (a bit a
// stake) combined by log-sum-exp, those not used counted as 0, and its
// first and second derivatives in μ; near is the stakes used within
// stakeNear of the best.
func logCapital(mu float64, xs, ns []float64, lo float64, use uint16) (f, df, d2f float64, near uint16) {
	span := mu - lo
	inv := 1 / span
	var terms, slopes, curves [len(stakes)]float64
	best := math.Inf(-1)
	for j, th := range stakes {
		if use&(1<<j) == 0 {
			continue
		}
		// With y = θ·(x − μ)/(μ − lo), q = (x − lo)/(1 + y) and
		// c = θ/(μ − lo)², a value's log(1 + y) has the derivatives −c·q
		// and 2c·q/(μ − lo) − c²·q² in μ.
		l, sq, sq2 := 0.0, 0.0, 0.0
		for k, x := range xs {
			if ns[k] == 0 {
				continue
			}
			y := th * (x - mu) * inv
			l += ns[k] * math.Log1p(y)
			q := (x - lo) / (1 + y)
			sq += ns[k] * q
			sq2 += ns[k] * q * q
		}
		c := th * inv * inv
		terms[j], slopes[j], curves[j] = l, -c*sq, 2*c*inv*sq-c*c*sq2
		best = max(best, l)
	}
	// The log of a weighted sum: its slope is the weighted mean slope, its
	// curvature the weighted mean of (curvature + slope²) less slope².
	var s, ds, d2s float64
	for j, l := range terms {
		if use&(1<<j) == 0 {
			continue
		}
		if l >= best-stakeNear {
			near |= 1 << j
		}
		w := math.Exp(l - best)
		s += w
		ds += w * slopes[j]
		d2s += w * (curves[j] + slopes[j]*slopes[j])
	}
	df = ds / s
	return best + math.Log(s/float64(len(stakes))), df, d2s/s - df*df, near
}
