package confseq

import (
	"math"
	"testing"
)

// Student's t quantiles against their closed forms, df 1 (Cauchy:
// tan(π(p − ½))) and 2 ((2p − 1)/√(2p(1 − p))), and for large df against
// the Cornish-Fisher expansion in the normal quantile (Abramowitz and
// Stegun 26.7.5, to the ν⁻⁴ term, within 1e-6 there).
func TestTQuantile(t *testing.T) {
	for _, p := range []float64{0.6, 0.975, 0.999, 0.99995} {
		if got, want := TQuantile(p, 1), math.Tan(math.Pi*(p-0.5)); math.Abs(got-want) > 1e-6*want {
			t.Errorf("t(%v, 1) = %v, want %v", p, got, want)
		}
		if got, want := TQuantile(p, 2), (2*p-1)/math.Sqrt(2*p*(1-p)); math.Abs(got-want) > 1e-6*want {
			t.Errorf("t(%v, 2) = %v, want %v", p, got, want)
		}
		for _, df := range []float64{200, 3000} {
			z := ZQuantile(p)
			z2 := z * z
			g1 := (z2 + 1) * z / 4
			g2 := ((5*z2+16)*z2 + 3) * z / 96
			g3 := (((3*z2+19)*z2+17)*z2 - 15) * z / 384
			g4 := ((((79*z2+776)*z2+1482)*z2-1920)*z2 - 945) * z / 92160
			cf := z + g1/df + g2/(df*df) + g3/(df*df*df) + g4/(df*df*df*df)
			if got := TQuantile(p, df); math.Abs(got-cf) > 1e-6 {
				t.Errorf("t(%v, %v) = %v, Cornish-Fisher %v", p, df, got, cf)
			}
		}
		// Heavier tails need more: the quantile falls with df.
		if !(TQuantile(p, 5) > TQuantile(p, 29) && TQuantile(p, 29) > TQuantile(p, 30) && TQuantile(p, 30) > TQuantile(p, 3000)) {
			t.Errorf("t(%v, ·) does not fall with df", p)
		}
	}
	if !math.IsInf(TQuantile(0.975, 0), 1) {
		t.Error("df 0 is not +Inf")
	}
}

// With every denominator 1 the interval is the paired t-interval of the
// per-question differences: mean ± t·sd/√k.
func TestPairedRatioDiffIsPairedT(t *testing.T) {
	nc := []float64{1, 1, 0, 1, 1, 0, 1, 1}
	nb := []float64{1, 0, 0, 1, 1, 1, 0, 1}
	one := []float64{1, 1, 1, 1, 1, 1, 1, 1}
	est, iv, k, ok := PairedRatioDiff(Both(0.025), nc, one, nb, one)
	var m, ss float64
	for i := range nc {
		m += nc[i] - nb[i]
	}
	m /= 8
	for i := range nc {
		d := nc[i] - nb[i] - m
		ss += d * d
	}
	r := TQuantile(0.975, 7) * math.Sqrt(ss/7/8)
	if !ok || k != 8 || math.Abs(est-m) > 1e-15 || math.Abs(iv.Lo-(m-r)) > 1e-12 || math.Abs(iv.Hi-(m+r)) > 1e-12 {
		t.Errorf("est %v interval %v (k %d, ok %v), want %v ± %v", est, iv, k, ok, m, r)
	}
	// Each side at its own level.
	_, asym, _, _ := PairedRatioDiff(Levels{Lo: 0.025, Hi: 0.001}, nc, one, nb, one)
	if rh := TQuantile(0.999, 7) * math.Sqrt(ss/7/8); math.Abs(asym.Lo-(m-r)) > 1e-12 || math.Abs(asym.Hi-(m+rh)) > 1e-12 {
		t.Errorf("levels (0.025, 0.001): %v, want [%v, %v]", asym, m-r, m+rh)
	}
	// Identical files: an interval of width 0 at 0.
	if est, iv, _, _ := PairedRatioDiff(Both(0.001), nc, one, nc, one); est != 0 || iv != (Interval{}) {
		t.Errorf("identical: %v %v", est, iv)
	}
	// Ratios: the estimate is the difference of the pooled ratios.
	est, _, _, ok = PairedRatioDiff(Both(0.01), []float64{2, 0, 3}, []float64{3, 1, 3}, []float64{1, 1, 2}, []float64{2, 2, 2})
	if want := 5.0/7 - 4.0/6; !ok || math.Abs(est-want) > 1e-15 {
		t.Errorf("ratio estimate %v, want %v", est, want)
	}
	if _, _, _, ok := PairedRatioDiff(Both(0.01), []float64{1}, []float64{1}, []float64{1}, []float64{1}); ok {
		t.Error("one question gave an interval")
	}
}
