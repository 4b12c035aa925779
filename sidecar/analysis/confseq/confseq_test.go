package confseq

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// Robbins' two-sided normal mixture in closed form: at its radius the
// mixture sqrt(ρ/(v+ρ))·exp(r²/(2(v+ρ))) is exactly 1/α.
func TestTwoSidedRadiusClosedForm(t *testing.T) {
	for _, c := range []struct{ alpha, rho, v float64 }{
		{0.05, 1, 0}, {0.05, 1, 100}, {0.01, 50, 1e4}, {0.001, 1569, 23873}, {1e-4, 0.5, 1e6},
	} {
		b := Boundary{Alpha: c.alpha, Rho: c.rho}
		r := b.TwoSidedRadius(c.v)
		want := math.Sqrt((c.v + c.rho) * math.Log((c.v+c.rho)/(c.rho*c.alpha*c.alpha)))
		if math.Abs(r-want) > 1e-12*want {
			t.Errorf("%+v: radius %v, want %v", c, r, want)
		}
		m := math.Sqrt(c.rho/(c.v+c.rho)) * math.Exp(r*r/(2*(c.v+c.rho)))
		if math.Abs(m*c.alpha-1) > 1e-9 {
			t.Errorf("%+v: mixture at the radius is %v, want 1/α = %v", c, m, 1/c.alpha)
		}
	}
	// A worked value: α = 0.05, ρ = 1, v = 99 → sqrt(100·log(100/0.0025)).
	if r := (Boundary{Alpha: 0.05, Rho: 1}).TwoSidedRadius(99); math.Abs(r-32.5525) > 1e-4 {
		t.Errorf("worked value: %v, want 32.5525", r)
	}
}

// The one-sided radius solves M(u, v) = 1/α, never from below (a radius
// short of the boundary would be anti-conservative), and lies between Robbins'
// two-sided radii at α and at 2α: the half-normal mixture is 2Φ(·) times
// the two-sided one, and 1 ≤ 2Φ ≤ 2 on the positive side.
func TestRadiusSolvesMixture(t *testing.T) {
	for _, alpha := range []float64{0.1, 0.05, 0.01, 0.001, 1e-5} {
		for _, rho := range []float64{0.1, 1, 100, 1e4} {
			for _, v := range []float64{0, 1, 10, 1e3, 1e5, 1e8} {
				b := Boundary{Alpha: alpha, Rho: rho}
				u := b.Radius(v)
				if got := b.logM(u, v); got < -math.Log(alpha) || got+math.Log(alpha) > 1e-8 {
					t.Errorf("α=%v ρ=%v v=%v: log M(u) = %v, want %v", alpha, rho, v, got, -math.Log(alpha))
				}
				hi := b.TwoSidedRadius(v)
				lo := Boundary{Alpha: 2 * alpha, Rho: rho}.TwoSidedRadius(v)
				if !(u <= hi*(1+1e-12) && (2*alpha >= 1 || u >= lo*(1-1e-12))) {
					t.Errorf("α=%v ρ=%v v=%v: radius %v outside [%v, %v]", alpha, rho, v, u, lo, hi)
				}
			}
		}
	}
	if r := (Boundary{Alpha: 0.05, Rho: 1}).Radius(math.NaN()); !math.IsInf(r, 1) {
		t.Errorf("Radius(NaN) = %v, want +Inf", r)
	}
}

// Tuned puts the boundary's tightest point at v0: any other ρ gives a
// radius at least as wide there.
func TestTuned(t *testing.T) {
	for _, c := range []struct{ alpha, v0 float64 }{{0.001, 23873}, {0.05, 100}, {0.01, 1e6}} {
		b := Tuned(c.alpha, c.v0)
		u := b.Radius(c.v0)
		for _, f := range []float64{0.25, 0.5, 0.9, 1.1, 2, 4} {
			o := Boundary{Alpha: c.alpha, Rho: b.Rho * f}.Radius(c.v0)
			if o < u*(1-1e-6) {
				t.Errorf("%+v: ρ×%v gives %v < tuned %v", c, f, o, u)
			}
		}
	}
}

func TestZQuantile(t *testing.T) {
	for p, want := range map[float64]float64{0.5: 0, 0.975: 1.959963984540054, 0.999: 3.090232306167813, 0.1: -1.2815515655446004} {
		if got := ZQuantile(p); math.Abs(got-want) > 1e-12 {
			t.Errorf("ZQuantile(%v) = %v, want %v", p, got, want)
		}
	}
}

// crossRate is the share of runs in which a process ever leaves its
// bounds; the bound holds when that share is at most α (within three
// standard errors of the simulation).
func checkRate(t *testing.T, what string, crossed, runs int, alpha float64) {
	t.Helper()
	rate := float64(crossed) / float64(runs)
	slack := 3 * math.Sqrt(alpha*(1-alpha)/float64(runs))
	t.Logf("%s: crossed in %d of %d runs (%.4f, α = %v)", what, crossed, runs, rate, alpha)
	if rate > alpha+slack {
		t.Errorf("%s: crossed in %.4f of runs, more than α = %v", what, rate, alpha)
	}
}

// checkSides runs runs processes, each telling whether it ever left its
// lower and its upper bound, and checks the rate of each side on its own
// (checkRate).
func checkSides(t *testing.T, lowWhat, highWhat string, runs int, alpha float64, run func() (lowOut, highOut bool)) {
	t.Helper()
	low, high := 0, 0
	for range runs {
		lo, hi := run()
		if lo {
			low++
		}
		if hi {
			high++
		}
	}
	checkRate(t, lowWhat, low, runs, alpha)
	checkRate(t, highWhat, high, runs, alpha)
}

// Time-uniform coverage of a Gaussian random walk: the one-sided bound is
// crossed, at any of 20,000 steps, in at most α of the runs. This is the
// exact case of Ville's inequality, so the rate must be well below α.
func TestCoverageGaussianWalk(t *testing.T) {
	const runs, steps, alpha = 2000, 20000, 0.05
	b := Tuned(alpha, 1000)
	radius := make([]float64, steps+1)
	for n := 1; n <= steps; n++ {
		radius[n] = b.Radius(float64(n))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	crossed := 0
	for range runs {
		s := 0.0
		for n := 1; n <= steps; n++ {
			s += rng.NormFloat64()
			if s >= radius[n] {
				crossed++
				break
			}
		}
	}
	checkRate(t, "Gaussian walk", crossed, runs, alpha)
	if crossed == 0 {
		t.Error("no run crossed: the bound is far looser than α, or the walk is wrong")
	}
}

// Time-uniform coverage of ProportionDiff on what a canary is: two
// Bernoulli streams of equal rate, one arm with four times the other's
// traffic, the interval read every 10 candidate events up to 3,000. Each
// side is checked on its own: its miscoverage must stay within α.
func TestCoverageProportionDiff(t *testing.T) {
	const runs, alpha = 1000, 0.05
	for _, p := range []float64{0.85, 0.5, 0.97, 0.03} {
		b := Tuned(alpha, PlannedInformation(alpha, 0.02))
		rng := rand.New(rand.NewPCG(3, uint64(p*1000)))
		checkSides(t, "lower side, p="+ftoa(p), "upper side, p="+ftoa(p), runs, alpha, func() (lowOut, highOut bool) {
			var x1, n1, x2, n2 float64
			for step := 1; step <= 300; step++ {
				for range 10 {
					n1++
					if rng.Float64() < p {
						x1++
					}
				}
				for range 40 {
					n2++
					if rng.Float64() < p {
						x2++
					}
				}
				if n1 < 100 {
					continue // min_samples: the analysis does not judge before
				}
				iv := ProportionDiff(b, x1, n1, x2, n2)
				lowOut = lowOut || iv.Lo > 0
				highOut = highOut || iv.Hi < 0
			}
			return lowOut, highOut
		})
	}
}

// Time-uniform coverage of QuantileRanks: at the true p-quantile of a
// uniform stream, the count of values below it stays within np ∓ u(np(1−p))
// at every n up to 10,000, in all but α of the runs.
func TestCoverageQuantileRanks(t *testing.T) {
	const runs, steps, alpha = 600, 10000, 0.05
	for _, p := range []float64{0.5, 0.9} {
		b := Tuned(alpha, 4000*p*(1-p))
		rng := rand.New(rand.NewPCG(5, uint64(p*10)))
		checkSides(t, "quantile lower bound, p="+ftoa(p), "quantile upper bound, p="+ftoa(p), runs, alpha, func() (lo, hi bool) {
			below := 0.0
			for n := 1; n <= steps; n++ {
				if rng.Float64() <= p {
					below++
				}
				if n%10 != 0 {
					continue
				}
				fl, fh := QuantileRanks(b, p, float64(n), 1)
				// The quantile is above the order statistic of rank
				// ⌈n·fl⌉ unless fewer values lie below it, and below the
				// one of rank ⌊n·fh⌋+1 unless more do.
				lo = lo || below < math.Ceil(float64(n)*fl)
				hi = hi || below > math.Floor(float64(n)*fh)
			}
			return lo, hi
		})
	}
}

// Values in clusters: visits of three runs that cite the same item, as an
// unchanged index's do. The ranks that take the design effect (3) keep
// their coverage; those that take the values as independent do not.
func TestCoverageQuantileRanksClustered(t *testing.T) {
	const runs, visits, size, alpha = 400, 3000, 3, 0.05
	p := 0.9
	b := Tuned(alpha, 4000*p*(1-p))
	for _, deff := range []float64{size, 1} {
		rng := rand.New(rand.NewPCG(6, uint64(deff)))
		var missed [2]int // below the lower bound, above the upper
		for range runs {
			below := 0.0
			var out [2]bool
			for v := 1; v <= visits; v++ {
				if rng.Float64() <= p {
					below += size
				}
				n := float64(v * size)
				fl, fh := QuantileRanks(b, p, n, deff)
				out[0] = out[0] || below < math.Ceil(n*fl)
				out[1] = out[1] || below > math.Floor(n*fh)
			}
			for s := range out {
				if out[s] {
					missed[s]++
				}
			}
		}
		lo, hi := float64(missed[0])/runs, float64(missed[1])/runs
		switch {
		case deff == size && (lo > alpha || hi > alpha):
			t.Errorf("design effect %g: each side missed in %.3f and %.3f of runs, want at most α = %g", deff, lo, hi, alpha)
		case deff == 1 && max(lo, hi) <= 2*alpha:
			t.Errorf("values taken as independent: sides missed in only %.3f and %.3f of runs; the clusters should break the bound", lo, hi)
		}
		t.Logf("design effect %g: sides missed in %.3f and %.3f of runs (α = %g each)", deff, lo, hi, alpha)
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func TestProportionEdges(t *testing.T) {
	b := Tuned(0.01, 1000)
	if iv := Proportion(b, 0, 0); iv != (Interval{0, 1}) {
		t.Errorf("no data: %+v", iv)
	}
	if iv := ProportionDiff(b, 1, 1, 0, 0); iv != (Interval{-1, 1}) {
		t.Errorf("no baseline: %+v", iv)
	}
	// All successes: the smoothed variance keeps the interval open below 1.
	iv := Proportion(b, 1000, 1000)
	if !(iv.Hi == 1 && iv.Lo < 1 && iv.Lo > 0.9) {
		t.Errorf("1000 of 1000: %+v", iv)
	}
	// More data, narrower interval.
	a, c := ProportionDiff(b, 850, 1000, 3400, 4000), ProportionDiff(b, 8500, 10000, 34000, 40000)
	if !(c.Hi-c.Lo < a.Hi-a.Lo && a.Lo < 0 && a.Hi > 0 && c.Lo < 0 && c.Hi > 0) {
		t.Errorf("1000 vs 10000 samples: %+v, %+v", a, c)
	}
}
