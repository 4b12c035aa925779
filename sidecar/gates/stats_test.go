package gates

import (
	"math"
	"testing"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"
)

func TestNormalQuantile(t *testing.T) {
	// Reference quantiles from Python's statistics.NormalDist().inv_cdf
	// (Wichura's AS241, about 1e-16); 1.959963984540054 and 2.5758293035489
	// are the textbook 97.5% and 99.5% points.
	cases := []struct{ p, z float64 }{
		{0.5, 0},
		{0.975, 1.9599639845400536},
		{0.025, -1.9599639845400538},
		{0.95, 1.6448536269514715},
		{0.995, 2.5758293035489},
		{0.9995, 3.2905267314919255},
		{0.8413447460685429, 1}, // Φ(1)
		{1e-10, -6.361340902404056},
		{1 - 1e-10, 6.361340889697421}, // 1−1e-10 is not exact in binary
		{0.02425, -1.9729610513118845}, // Acklam's region boundary
		{0.3, -0.5244005127080407},
	}
	for _, c := range cases {
		got := NormalQuantile(c.p)
		if math.Abs(got-c.z) > 1e-12*max(1, math.Abs(c.z)) {
			t.Errorf("NormalQuantile(%v) = %.17g, want %.17g", c.p, got, c.z)
		}
		// Acklam alone: relative error below 1.15e-9 as published.
		if raw := acklam(c.p); math.Abs(raw-c.z) > 1.2e-9*max(math.Abs(c.z), 1e-300) && c.z != 0 {
			t.Errorf("acklam(%v) = %.17g, want %.17g within 1.15e-9", c.p, raw, c.z)
		}
	}
	// Against the standard library's inverse error function over a grid.
	for p := 1e-6; p < 1; p += 0.0007 {
		want := math.Sqrt2 * math.Erfinv(2*p-1)
		if got := NormalQuantile(p); math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
			t.Fatalf("NormalQuantile(%v) = %.17g, Erfinv gives %.17g", p, got, want)
		}
	}
	if !math.IsInf(NormalQuantile(0), -1) || !math.IsInf(NormalQuantile(1), 1) || !math.IsNaN(NormalQuantile(1.5)) || !math.IsNaN(NormalQuantile(math.NaN())) {
		t.Error("NormalQuantile at the ends: want -Inf, +Inf, NaN, NaN")
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestWilson(t *testing.T) {
	// Newcombe, R. G. (1998a) "Two-sided confidence intervals for the single
	// proportion: comparison of seven methods", Statistics in Medicine 17,
	// 857-872, Table I, method 3 (score interval, no continuity correction),
	// 95%: 81/263, 15/148, 0/20, 1/29, 29/29.
	cases := []struct {
		num, den float64
		lo, hi   float64
	}{
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0, 0.1611},
		{1, 29, 0.0061, 0.1718},
		{29, 29, 0.8830, 1},
	}
	for _, c := range cases {
		lo, hi := Wilson(c.num, c.den, 0.95)
		if !near(lo, c.lo, 5e-5) || !near(hi, c.hi, 5e-5) {
			t.Errorf("Wilson(%v/%v) = (%.5f, %.5f), want (%.4f, %.4f)", c.num, c.den, lo, hi, c.lo, c.hi)
		}
	}
	// More digits, computed from the closed form with z = 1.959963984540054.
	if lo, hi := Wilson(81, 263, 0.95); !near(lo, 0.2552885198782743, 1e-13) || !near(hi, 0.3662095769828001, 1e-13) {
		t.Errorf("Wilson(81/263) = (%.16f, %.16f)", lo, hi)
	}
	// 99%: the interval widens.
	lo95, hi95 := Wilson(81, 263, 0.95)
	lo99, hi99 := Wilson(81, 263, 0.99)
	if !(lo99 < lo95 && hi99 > hi95) {
		t.Errorf("99%% interval (%v, %v) not wider than 95%% (%v, %v)", lo99, hi99, lo95, hi95)
	}
	if lo, hi := Wilson(0, 0, 0.95); lo != 0 || hi != 1 {
		t.Errorf("Wilson(0/0) = (%v, %v), want (0, 1)", lo, hi)
	}
}

func TestNewcombe(t *testing.T) {
	// Newcombe, R. G. (1998b) "Interval estimation for the difference
	// between independent proportions: comparison of eleven methods",
	// Statistics in Medicine 17, 873-890, Table II, method 10 (hybrid score
	// interval without continuity correction), 95%, examples (a)-(h).
	cases := []struct {
		x1, n1, x2, n2 float64
		lo, hi         float64
	}{
		{56, 70, 48, 80, 0.0524, 0.3339},
		{9, 10, 3, 10, 0.1705, 0.8090},
		{6, 7, 2, 7, 0.0582, 0.8062},
		{5, 56, 0, 29, -0.0381, 0.1926},
		{0, 10, 0, 20, -0.1611, 0.2775},
		{0, 10, 0, 10, -0.2775, 0.2775},
		{10, 10, 0, 20, 0.6791, 1},
		{10, 10, 0, 10, 0.6075, 1},
	}
	for _, c := range cases {
		lo, hi := Newcombe(c.x1, c.n1, c.x2, c.n2, 0.95)
		if !near(lo, c.lo, 5e-5) || !near(hi, c.hi, 5e-5) {
			t.Errorf("Newcombe(%v/%v − %v/%v) = (%.5f, %.5f), want (%.4f, %.4f)", c.x1, c.n1, c.x2, c.n2, lo, hi, c.lo, c.hi)
		}
	}
	if lo, hi := Newcombe(56, 70, 48, 80, 0.95); !near(lo, 0.05243147240236498, 1e-13) || !near(hi, 0.3338726540369059, 1e-13) {
		t.Errorf("Newcombe(56/70 − 48/80) = (%.16f, %.16f)", lo, hi)
	}
	// Swapping the arms mirrors the interval.
	lo, hi := Newcombe(48, 80, 56, 70, 0.95)
	if !near(lo, -0.3338726540369059, 1e-13) || !near(hi, -0.05243147240236498, 1e-13) {
		t.Errorf("Newcombe(48/80 − 56/70) = (%v, %v)", lo, hi)
	}
}

func expand(vals ...float64) []Bin {
	b := make([]Bin, len(vals))
	for i, v := range vals {
		b[i] = Bin{Value: v, Count: 1}
	}
	return b
}

func TestMannWhitney(t *testing.T) {
	// Reference values: U counted pair by pair, then the tie- and
	// continuity-corrected normal approximation (scipy.stats.mannwhitneyu,
	// method="asymptotic"); computed with a small python3 script.
	cases := []struct {
		name string
		x, y []Bin
		u, z float64
		p    float64
		dir  int
	}{
		{
			// By hand: no x exceeds a y, U = 0; μ = 6, σ² = 3·4/12·8 = 8,
			// z = −(6 − ½)/√8 = −1.94454.
			name: "no ties",
			x:    expand(1, 2, 3), y: expand(4, 5, 6, 7),
			u: 0, z: -1.9445436482630056, p: 0.05182992721790969, dir: -1,
		},
		{
			// By hand: U = 0 + ½·2 + (1 + ½) + 4 = 6.5; tie groups 2 (t=3),
			// 3 (t=2), 4 (t=2): Σ(t³−t) = 36; σ² = 30/12·(12 − 36/110).
			name: "ties",
			x:    expand(1, 2, 2, 3, 5), y: expand(2, 3, 4, 4, 6, 7),
			u: 6.5, z: -1.4809275530712105, p: 0.13862587987892772, dir: -1,
		},
		{
			name: "bins",
			x:    []Bin{{0.1, 30}, {0.2, 50}, {0.3, 20}},
			y:    []Bin{{0.4, 10}, {0.1, 20}, {0.3, 30}, {0.2, 40}, {0.5, 0}},
			u:    3800, z: -3.1286995182045967, p: 0.001755817617154043, dir: -1,
		},
	}
	for _, c := range cases {
		r := MannWhitney(c.x, c.y)
		if !near(r.U, c.u, 1e-9) || !near(r.Z, c.z, 1e-12) || !near(r.P, c.p, 1e-12) || r.Direction != c.dir {
			t.Errorf("%s: got U=%v z=%.16g p=%.16g dir=%d, want U=%v z=%v p=%v dir=%d", c.name, r.U, r.Z, r.P, r.Direction, c.u, c.z, c.p, c.dir)
		}
		// Swapping the samples: U' = NX·NY − U, z and direction flip.
		s := MannWhitney(c.y, c.x)
		if !near(s.U, r.NX*r.NY-r.U, 1e-9) || !near(s.Z, -r.Z, 1e-12) || !near(s.P, r.P, 1e-12) || s.Direction != -r.Direction {
			t.Errorf("%s swapped: %+v vs %+v", c.name, s, r)
		}
	}
	// Degenerate: one value everywhere, or an empty side.
	for _, r := range []MWResult{MannWhitney(expand(5, 5, 5), expand(5, 5)), MannWhitney(nil, expand(1, 2)), MannWhitney(expand(1), nil)} {
		if r.P != 1 || r.Z != 0 || r.Direction != 0 {
			t.Errorf("degenerate: %+v, want P=1 Z=0 Direction=0", r)
		}
	}
	// |U − μ| < ½: z is 0, not of the wrong sign.
	if r := MannWhitney(expand(1, 3), expand(2)); r.U != 1 || r.Z != 0 || r.P != 1 {
		t.Errorf("U at μ: %+v", r)
	}
}

func TestSketchBins(t *testing.T) {
	m, err := mapping.NewCubicallyInterpolatedMapping(0.01)
	if err != nil {
		t.Fatal(err)
	}
	a := ddsketch.NewDDSketch(m, store.NewDenseStore(), store.NewDenseStore())
	b := ddsketch.NewDDSketch(m, store.NewDenseStore(), store.NewDenseStore())
	for _, v := range []float64{0.3, 0.3001, 0.5, 0} {
		_ = a.Add(v)
	}
	for _, v := range []float64{0.3, 0.7} {
		_ = b.Add(v)
	}
	bins := SketchBins(a)
	if len(bins) != 3 || bins[0] != (Bin{0, 1}) || bins[1].Count != 2 || bins[2].Count != 1 {
		t.Fatalf("SketchBins = %+v", bins)
	}
	// 0.3 falls in the same bin in both sketches: one tie group.
	r := MannWhitney(bins, SketchBins(b))
	// x: 0, 0.3, 0.3, 0.5; y: 0.3, 0.7 → U = 0 + ½ + ½ + 1 + (0) = 2.
	if r.U != 2 {
		t.Errorf("U = %v, want 2", r.U)
	}
	if SketchBins(nil) != nil {
		t.Error("SketchBins(nil) != nil")
	}
}
