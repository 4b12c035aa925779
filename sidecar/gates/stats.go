package gates

import (
	"math"
	"slices"

	"github.com/DataDog/sketches-go/ddsketch"
)

// NormalQuantile is the inverse of the standard normal CDF: the z with
// Φ(z) = p. It is Acklam's rational approximation (relative error below
// 1.15e-9 on (0,1)) refined by one step of Halley's method on math.Erfc,
// which brings it to about 1e-15 (the upper half by symmetry). NormalQuantile(0) = -Inf,
// NormalQuantile(1) = +Inf, NaN outside [0,1].
func NormalQuantile(p float64) float64 {
	switch {
	case math.IsNaN(p) || p < 0 || p > 1:
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	}
	if p > 0.5 {
		// 1−p is exact for p ≥ ½; refining in the lower tail keeps Φ(x) − p
		// free of cancellation.
		return -NormalQuantile(1 - p)
	}
	x := acklam(p)
	// Halley step: e = Φ(x) − p, u = e / φ(x).
	e := 0.5*math.Erfc(-x/math.Sqrt2) - p
	u := e * math.Sqrt(2*math.Pi) * math.Exp(x*x/2)
	return x - u/(1+x*u/2)
}

// Coefficients of Acklam's algorithm ("An algorithm for computing the
// inverse normal cumulative distribution function", P. J. Acklam, 2003).
var (
	acklamA = [6]float64{-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00}
	acklamB = [5]float64{-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01}
	acklamC = [6]float64{-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00}
	acklamD = [4]float64{7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00}
)

const acklamLow = 0.02425

// acklam is Acklam's approximation alone, for p in (0,1).
func acklam(p float64) float64 {
	a, b, c, d := &acklamA, &acklamB, &acklamC, &acklamD
	switch {
	case p < acklamLow:
		q := math.Sqrt(-2 * math.Log(p))
		return (((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) /
			((((d[0]*q+d[1])*q+d[2])*q+d[3])*q + 1)
	case p <= 1-acklamLow:
		q := p - 0.5
		r := q * q
		return (((((a[0]*r+a[1])*r+a[2])*r+a[3])*r+a[4])*r + a[5]) * q /
			(((((b[0]*r+b[1])*r+b[2])*r+b[3])*r+b[4])*r + 1)
	default:
		q := math.Sqrt(-2 * math.Log1p(-p))
		return -(((((c[0]*q+c[1])*q+c[2])*q+c[3])*q+c[4])*q + c[5]) /
			((((d[0]*q+d[1])*q+d[2])*q+d[3])*q + 1)
	}
}

// NormalCDF is Φ(x), the standard normal CDF.
func NormalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// zTwoSided is the z of a two-sided interval at confidence level conf:
// Φ⁻¹(1 − (1−conf)/2).
func zTwoSided(conf float64) float64 { return NormalQuantile(1 - (1-conf)/2) }

// Wilson is the Wilson score interval of the proportion num/den at the
// two-sided confidence level conf in (0,1) (Wilson 1927; method 3 of
// Newcombe 1998a). With den <= 0 there is no information: [0, 1].
func Wilson(num, den, conf float64) (lo, hi float64) {
	if !(den > 0) {
		return 0, 1
	}
	return wilsonZ(num, den, zTwoSided(conf))
}

func wilsonZ(num, den, z float64) (lo, hi float64) {
	p := min(max(num/den, 0), 1)
	z2 := z * z
	denom := 1 + z2/den
	center := (p + z2/(2*den)) / denom
	half := z / denom * math.Sqrt(p*(1-p)/den+z2/(4*den*den))
	lo, hi = center-half, center+half
	// exact at the ends (the formula gives them up to rounding)
	if num <= 0 {
		lo = 0
	}
	if num >= den {
		hi = 1
	}
	return max(lo, 0), min(hi, 1)
}

// Newcombe is the hybrid score interval of the difference p1 − p2 of two
// independent proportions p1 = x1/n1 and p2 = x2/n2 at the two-sided
// confidence level conf (method 10 of Newcombe 1998b): with (l1,u1) and
// (l2,u2) the Wilson intervals of p1 and p2,
//
//	L = p1 − p2 − √((p1−l1)² + (u2−p2)²)
//	U = p1 − p2 + √((u1−p1)² + (p2−l2)²)
//
// A side with n <= 0 has no information: its Wilson interval is [0,1] around
// p = 0.5.
func Newcombe(x1, n1, x2, n2, conf float64) (lo, hi float64) {
	z := zTwoSided(conf)
	side := func(x, n float64) (p, l, u float64) {
		if !(n > 0) {
			return 0.5, 0, 1
		}
		l, u = wilsonZ(x, n, z)
		return min(max(x/n, 0), 1), l, u
	}
	p1, l1, u1 := side(x1, n1)
	p2, l2, u2 := side(x2, n2)
	d := p1 - p2
	lo = d - math.Sqrt((p1-l1)*(p1-l1)+(u2-p2)*(u2-p2))
	hi = d + math.Sqrt((u1-p1)*(u1-p1)+(p2-l2)*(p2-l2))
	return max(lo, -1), min(hi, 1)
}

// Bin is a value and how many observations it stands for: a sketch bin's
// representative value and count, or one observation with Count 1.
type Bin struct {
	Value, Count float64
}

// SketchBins lists the bins of s (its zero count as value 0 first), in
// increasing order of value; nil for a nil or empty sketch.
func SketchBins(s *ddsketch.DDSketch) []Bin {
	if s == nil || s.IsEmpty() {
		return nil
	}
	var bins []Bin
	s.ForEach(func(v, c float64) bool {
		if c > 0 {
			bins = append(bins, Bin{Value: v, Count: c})
		}
		return false
	})
	slices.SortFunc(bins, func(a, b Bin) int { return byValue(a.Value, b.Value) })
	return bins
}

// byValue orders values by < and >: -1, 1, or 0 when neither holds.
func byValue(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// MWResult is the outcome of a Mann-Whitney U test of sample x against
// sample y.
type MWResult struct {
	NX, NY float64
	// U is the U statistic of x: the pairs (xi, yj) with xi > yj, plus half
	// the pairs with xi = yj. U/(NX·NY) is the probability that a random x
	// exceeds a random y (ties counted half).
	U float64
	// Z is the normal approximation of U, tie-corrected and
	// continuity-corrected (|U − NX·NY/2| is reduced by ½, not below 0);
	// positive when x tends to be larger.
	Z float64
	// P is the two-sided p-value, 2·Φ(−|Z|), in [0,1].
	P float64
	// Direction is +1 when x is stochastically larger than y
	// (U > NX·NY/2), −1 when it is smaller, 0 when neither.
	Direction int
}

// MannWhitney tests whether x and y come from the same distribution: the
// two-sided Mann-Whitney U test (Wilcoxon rank-sum) with the normal
// approximation, midranks for ties and the tie-corrected variance
//
//	σ² = NX·NY/12 · ((N+1) − Σ(t³−t) / (N(N−1)))
//
// over tie groups of size t, and a continuity correction of ½ — what
// scipy.stats.mannwhitneyu(method="asymptotic") and R's wilcox.test(exact =
// FALSE) compute. Each distinct Value is one tie group across both samples
// (the bins of two sketches with one index mapping line up exactly). Bins
// may come in any order; those with Count <= 0 are ignored. With an empty
// sample or no spread at all, Z = 0, P = 1 and Direction = 0.
func MannWhitney(x, y []Bin) MWResult {
	type group struct{ v, cx, cy float64 }
	gs := make([]group, 0, len(x)+len(y))
	var r MWResult
	for _, b := range x {
		if b.Count > 0 {
			gs = append(gs, group{b.Value, b.Count, 0})
			r.NX += b.Count
		}
	}
	for _, b := range y {
		if b.Count > 0 {
			gs = append(gs, group{b.Value, 0, b.Count})
			r.NY += b.Count
		}
	}
	r.P = 1
	if r.NX == 0 || r.NY == 0 {
		return r
	}
	slices.SortFunc(gs, func(a, b group) int { return byValue(a.v, b.v) })
	var rankX, ties, below float64
	for i := 0; i < len(gs); {
		g := gs[i]
		j := i + 1
		for j < len(gs) && gs[j].v == g.v {
			g.cx += gs[j].cx
			g.cy += gs[j].cy
			j++
		}
		t := g.cx + g.cy
		rankX += g.cx * (below + (t+1)/2) // midrank of the group
		ties += t*t*t - t
		below += t
		i = j
	}
	n := r.NX + r.NY
	r.U = rankX - r.NX*(r.NX+1)/2
	mu := r.NX * r.NY / 2
	switch {
	case r.U > mu:
		r.Direction = 1
	case r.U < mu:
		r.Direction = -1
	}
	variance := r.NX * r.NY / 12 * ((n + 1) - ties/(n*(n-1)))
	if !(variance > 0) {
		r.Direction = 0
		return r
	}
	d := max(math.Abs(r.U-mu)-0.5, 0)
	r.Z = float64(r.Direction) * d / math.Sqrt(variance)
	r.P = min(1, math.Erfc(math.Abs(r.Z)/math.Sqrt2))
	return r
}
