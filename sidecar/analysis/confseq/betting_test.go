package confseq

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The lower bound is where the average capital reaches 1/α: no higher
// (that would be anti-conservative), and within 1e-6 of the root found
// here by plain bisection.
func TestBettingSolvesCapital(t *testing.T) {
	for _, c := range []struct {
		alpha float64
		v     Values
	}{
		// Many distinct values and many of them, as visits' linearised
		// differences are: most stakes lie far below the best, and the
		// search bets on the ones near it only.
		{0.0125, manyValues()},
		{0.05, Values{X: []float64{0}, N: []float64{500}, Lo: -1, Hi: 1}},
		// One value a few times: the start from the largest stake's
		// crossing, far below the mean.
		{0.05, Values{X: []float64{0}, N: []float64{1}, Lo: -1, Hi: 1}},
		{0.025, Values{X: []float64{0.3}, N: []float64{3}, Lo: -1, Hi: 1}},
		{0.025, Values{X: []float64{0.3, 0.31}, N: []float64{40, 1}, Lo: -1.4, Hi: 1.2}},
		{0.001, Values{X: []float64{-1, 0, 1}, N: []float64{30, 2000, 25}, Lo: -1, Hi: 1}},
		{0.01, Values{X: []float64{0, 1}, N: []float64{40, 60}, Lo: 0, Hi: 1}},
		{1e-4, Values{X: []float64{-0.93, 0.12, 1.06, -1.06, 0.04}, N: []float64{5, 100, 7, 3, 4000}, Lo: -1.1, Hi: 1.1}},
	} {
		iv := BettingMean(Both(c.alpha), c.v)
		target := -math.Log(c.alpha)
		m := c.v.Mean()
		lo, hi := c.v.Lo, m
		for range 200 {
			mid := (lo + hi) / 2
			if l, _, _, _ := logCapital(mid, c.v.X, c.v.N, c.v.Lo, 1<<len(stakes)-1); l >= target {
				lo = mid
			} else {
				hi = mid
			}
		}
		if iv.Lo > hi || hi-iv.Lo > 1e-6 {
			t.Errorf("%+v: lower bound %v, the full average's root %v (mean %v)", c.v, iv.Lo, hi, m)
		}
		if !(iv.Lo <= m && m <= iv.Hi && iv.Lo >= c.v.Lo && iv.Hi <= c.v.Hi) {
			t.Errorf("%+v: interval %v around mean %v", c.v, iv, m)
		}
		// The upper bound is the lower bound of −X.
		neg := Values{Lo: -c.v.Hi, Hi: -c.v.Lo, N: c.v.N}
		for _, x := range c.v.X {
			neg.X = append(neg.X, -x)
		}
		if mirror := BettingMean(Both(c.alpha), neg); math.Abs(mirror.Lo+iv.Hi) > 1e-12 || math.Abs(mirror.Hi+iv.Lo) > 1e-12 {
			t.Errorf("%+v: mirror %v of %v", c.v, mirror, iv)
		}
	}
	if iv := BettingMean(Both(0.05), Values{Lo: -1, Hi: 1}); iv != (Interval{-1, 1}) {
		t.Errorf("no values: %v", iv)
	}
}

// logCapital's slope and curvature, which the search's Halley steps use,
// are those of its value: checked against central differences.
func TestLogCapitalDerivatives(t *testing.T) {
	for _, c := range []struct {
		v   Values
		use uint16
	}{
		{manyValues(), 1<<len(stakes) - 1},
		{manyValues(), 0b000011111100},
		{Values{X: []float64{-1, 0, 1}, N: []float64{30, 2000, 25}, Lo: -1, Hi: 1}, 1<<len(stakes) - 1},
		{Values{X: []float64{0.3, 0.31}, N: []float64{40, 1}, Lo: -1.4, Hi: 1.2}, 0b1},
	} {
		for _, mu := range []float64{c.v.Lo + 0.05, c.v.Mean() - 0.1, c.v.Mean() - 0.01} {
			const h = 1e-5
			f, df, d2f, _ := logCapital(mu, c.v.X, c.v.N, c.v.Lo, c.use)
			fp, dfp, _, _ := logCapital(mu+h, c.v.X, c.v.N, c.v.Lo, c.use)
			fm, dfm, _, _ := logCapital(mu-h, c.v.X, c.v.N, c.v.Lo, c.use)
			if want := (fp - fm) / (2 * h); math.Abs(df-want) > 1e-5*(1+math.Abs(want)) {
				t.Errorf("μ %v, use %b: slope %v, differences %v", mu, c.use, df, want)
			}
			if want := (dfp - dfm) / (2 * h); math.Abs(d2f-want) > 1e-4*(1+math.Abs(want)) {
				t.Errorf("μ %v, use %b: curvature %v, differences %v (value %v)", mu, c.use, d2f, want, f)
			}
		}
	}
}

// BettingPast leaves a side that does not pass past at its end of the
// range, and finds one that does as BettingMean does, from past.
func TestBettingPast(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	cases := []Values{manyValues(), {X: []float64{-1, 0, 1}, N: []float64{30, 2000, 25}, Lo: -1, Hi: 1}, {X: []float64{0.3, 0.31}, N: []float64{40, 1}, Lo: -1.4, Hi: 1.2}}
	passed, left := 0, 0
	for _, v := range cases {
		full := BettingMean(Both(0.01), v)
		for range 200 {
			past := Interval{Lo: full.Lo + (rng.Float64()-0.5)*0.2, Hi: full.Hi + (rng.Float64()-0.5)*0.2}
			if rng.IntN(8) == 0 {
				past = Interval{Lo: v.Lo - 1, Hi: v.Hi + 1}
			}
			got := BettingPast(Both(0.01), v, past)
			sides := []struct {
				name            string
				got, full, past float64
				end             float64
				passes          bool
			}{
				{"lower", got.Lo, full.Lo, past.Lo, v.Lo, full.Lo > past.Lo},
				{"upper", got.Hi, full.Hi, past.Hi, v.Hi, full.Hi < past.Hi},
			}
			for _, s := range sides {
				if math.Abs(s.full-s.past) < 1e-7 {
					continue // too near to say which it should be
				}
				if !s.passes {
					left++
					if s.got != s.end {
						t.Errorf("%s bound %v does not pass %v: got %v, want the end %v", s.name, s.full, s.past, s.got, s.end)
					}
					continue
				}
				passed++
				if math.Abs(s.got-s.full) > 1e-8 {
					t.Errorf("%s bound %v passes %v: got %v", s.name, s.full, s.past, s.got)
				}
			}
		}
	}
	if passed == 0 || left == 0 {
		t.Fatalf("%d sides passed, %d did not: the fixture misses a case", passed, left)
	}
}

// Each side holds at its own level: the lower bound at Levels.Lo is the
// one BettingMean gives at that level on both sides, and so is the upper.
func TestBettingLevels(t *testing.T) {
	v := Values{X: []float64{-1, 0, 1}, N: []float64{40, 900, 30}, Lo: -1, Hi: 1}
	iv := BettingMean(Levels{Lo: 0.01, Hi: 0.0005}, v)
	if lo, hi := BettingMean(Both(0.01), v).Lo, BettingMean(Both(0.0005), v).Hi; iv.Lo != lo || iv.Hi != hi {
		t.Errorf("levels (0.01, 0.0005): %v, want [%v, %v]", iv, lo, hi)
	}
	m := v.Mean()
	if !(m-iv.Lo < iv.Hi-m) {
		t.Errorf("%v: the side at 0.01 is not the nearer to the mean %v", iv, m)
	}
}

// When every pair agrees the bound closes in like log(1/α)/n: n agreeing
// pairs put the lower bound above −c·log(1/α)/n for a small c, and each
// further agreement narrows it.
func TestBettingAgreementNarrows(t *testing.T) {
	alpha := 0.01 / 24
	prev := -1.0
	for _, n := range []float64{10, 100, 1000, 10000} {
		iv := BettingMean(Both(alpha), Values{X: []float64{0}, N: []float64{n}, Lo: -1, Hi: 1})
		if iv.Lo <= prev || iv.Lo < -3*math.Log(24/0.01)/n || iv.Lo > 0 || iv.Hi != -iv.Lo {
			t.Errorf("n=%v: %v (previous lower bound %v)", n, iv, prev)
		}
		prev = iv.Lo
	}
}

// Coverage by simulation: i.i.d. values in [−1, 1] of several shapes,
// among them the sparse ones where almost every pair agrees (the arms of
// an unchanged index): the mean leaves the bounds at some read of the
// first 20,000 values in at most α of the runs, on each side.
func TestCoverageBettingMean(t *testing.T) {
	const alpha = 0.05
	runs, steps := 600, 20000
	if testing.Short() {
		runs = 200
	}
	shapes := []struct {
		name    string
		pm, pp  float64 // P(X = −1), P(X = +1); else 0
		uniform bool    // X = min(W, 1), W uniform on [−0.7, 1.3]
	}{
		{name: "agree 99.8%", pm: 0.001, pp: 0.001},
		{name: "sparse, skewed", pm: 0.004, pp: 0.0005},
		{name: "one in ten differs", pm: 0.06, pp: 0.04},
		{name: "coin flips", pm: 0.5, pp: 0.5},
		{name: "continuous", uniform: true},
	}
	for si, sh := range shapes {
		rng := rand.New(rand.NewPCG(7, uint64(si)))
		mean := sh.pp - sh.pm
		if sh.uniform {
			mean = (1-0.49)/4 + 0.3/2 // ∫_{−0.7}^{1} w/2 dw + P(W > 1)
		}
		low, high := 0, 0
		for range runs {
			// Continuous values are kept in 20 bins of their range, each
			// counted at its lower (upper) end for the lower (upper) bound:
			// a coarser look that moves each value towards the side
			// being bounded can only widen the bounds.
			var cnt [3]float64
			var up, down [21]float64
			lowOut, highOut := false, false
			for i := range steps {
				u := rng.Float64()
				switch {
				case sh.uniform:
					x := math.Min(2*u-1+0.3, 1)
					b := (x + 1) * 10
					up[int(math.Ceil(b))]++
					down[int(math.Floor(b))]++
				case u < sh.pm:
					cnt[0]++
				case u < sh.pm+sh.pp:
					cnt[2]++
				default:
					cnt[1]++
				}
				if i%400 != 399 {
					continue
				}
				var lo, hi Interval
				if sh.uniform {
					lo = BettingMean(Both(alpha), binned(down[:]))
					hi = BettingMean(Both(alpha), binned(up[:]))
				} else {
					v := Values{X: []float64{-1, 0, 1}, N: cnt[:], Lo: -1, Hi: 1}
					lo = BettingMean(Both(alpha), v)
					hi = lo
				}
				lowOut = lowOut || lo.Lo > mean
				highOut = highOut || hi.Hi < mean
			}
			if lowOut {
				low++
			}
			if highOut {
				high++
			}
		}
		for side, k := range map[string]int{"lower bound above the mean": low, "upper bound below the mean": high} {
			if rate := float64(k) / float64(runs); rate > alpha {
				t.Errorf("%s: %s in %d of %d runs (%.3f > α = %v)", sh.name, side, k, runs, rate, alpha)
			}
		}
	}
}

func binned(counts []float64) Values {
	v := Values{Lo: -1, Hi: 1}
	for b, c := range counts {
		if c > 0 {
			v.X = append(v.X, float64(b)/10-1)
			v.N = append(v.N, c)
		}
	}
	return v
}

// BenchmarkBettingMean bounds a mean from 3 values (pairs of a
// proportion) and from 400 (visits' linearised differences: 60,000 of
// them).
func BenchmarkBettingMean(b *testing.B) {
	for name, v := range map[string]Values{
		"values=3":   {X: []float64{-1, 0, 1}, N: []float64{30, 2000, 25}, Lo: -1, Hi: 1},
		"values=400": manyValues(),
	} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				BettingMean(Both(0.0125), v)
			}
		})
	}
}

// manyValues are 400 distinct values, about 60,000 in all.
func manyValues() Values {
	rng := rand.New(rand.NewPCG(4, 4))
	v := Values{Lo: -1.3, Hi: 1.2}
	for k := range 400 {
		v.X = append(v.X, -0.6+float64(k)*0.003)
		v.N = append(v.N, float64(1+rng.IntN(300)))
	}
	return v
}
