package statuspage

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func pt(sec int, v float64) Point {
	return Point{T: t0.Add(time.Duration(sec) * time.Second), Value: v, Valid: true}
}

func gap(sec int) Point { return Point{T: t0.Add(time.Duration(sec) * time.Second)} }

func TestChartGeometry(t *testing.T) {
	// x: 0 s → plotLeft, 100 s → plotRight; y: max 1 → plotTop, min 0 → plotBottom
	c := layoutChart("precision", []Point{pt(0, 0), pt(25, 1), pt(50, 0.5), pt(100, 0.25)})
	w := plotRight - plotLeft
	hgt := plotBottom - plotTop
	want := "M" + fmtCoord(plotLeft) + " " + fmtCoord(plotBottom) +
		" L" + fmtCoord(round1(plotLeft+w/4)) + " " + fmtCoord(plotTop) +
		" L" + fmtCoord(round1(plotLeft+w/2)) + " " + fmtCoord(round1(plotTop+hgt/2)) +
		" L" + fmtCoord(plotRight) + " " + fmtCoord(round1(plotTop+hgt*3/4))
	if c.Path != want {
		t.Errorf("path\n got %q\nwant %q", c.Path, want)
	}
	if c.Last == nil || c.Last.X != plotRight || c.Last.Y != round1(plotTop+hgt*3/4) {
		t.Errorf("last = %+v", c.Last)
	}
	if c.MaxLabel != "1" || c.MinLabel != "0" {
		t.Errorf("labels max %q min %q, want 1 and 0", c.MaxLabel, c.MinLabel)
	}
	if len(c.Dots) != 0 || c.Empty {
		t.Errorf("dots %v empty %v", c.Dots, c.Empty)
	}
	for _, s := range []string{"precision", "last 0.25", "min 0", "max 1", "4 of 4 points", "over the last 1m40s"} {
		if !strings.Contains(c.Title, s) {
			t.Errorf("title %q lacks %q", c.Title, s)
		}
	}
	// every coordinate is inside the plot area
	for _, p := range pathPoints(t, c.Path) {
		if p.X < plotLeft || p.X > plotRight || p.Y < plotTop || p.Y > plotBottom {
			t.Errorf("point %+v outside the plot area", p)
		}
	}
}

func TestChartSkipsInvalidValues(t *testing.T) {
	c := layoutChart("chr", []Point{
		pt(0, 2), pt(10, 4), gap(20), pt(30, 3), gap(40),
		{T: t0.Add(50 * time.Second), Value: math.NaN(), Valid: true},
		pt(60, 2), pt(70, 4), {T: t0.Add(80 * time.Second), Value: 100}, // invalid: value ignored
	})
	pts := pathPoints(t, c.Path)
	if len(pts) != 5 {
		t.Fatalf("path %q has %d points, want 5", c.Path, len(pts))
	}
	if n := strings.Count(c.Path, "M"); n != 3 {
		t.Errorf("path %q: %d runs, want 3 (the gaps break the line)", c.Path, n)
	}
	// the scale ignores the invalid 100: max 4 at the top
	if c.MaxLabel != "4" || c.MinLabel != "2" {
		t.Errorf("labels %q %q, want 4 and 2", c.MaxLabel, c.MinLabel)
	}
	if pts[1].Y != plotTop {
		t.Errorf("4 at y %v, want %v", pts[1].Y, plotTop)
	}
	// x still by time over all the points: 30 s of 80 s
	wantX := round1(plotLeft + (plotRight-plotLeft)*30/80)
	if len(c.Dots) != 1 || c.Dots[0].X != wantX || c.Dots[0].Y != round1((plotTop+plotBottom)/2) {
		t.Errorf("lone point as dots %+v, want one at x %v", c.Dots, wantX)
	}
	// the last point with a value is at 70 s, not 80 s
	if c.Last == nil || c.Last.X != round1(plotLeft+(plotRight-plotLeft)*70/80) || c.Last.Y != plotTop {
		t.Errorf("last = %+v", c.Last)
	}
	if !strings.Contains(c.Title, "5 of 9 points") {
		t.Errorf("title %q", c.Title)
	}
}

func TestChartEmptyAndSinglePoint(t *testing.T) {
	for _, pts := range [][]Point{nil, {gap(0)}, {gap(0), gap(10)}} {
		c := layoutChart("kappa", pts)
		if !c.Empty || c.Path != "" || c.Last != nil || len(c.Dots) != 0 {
			t.Errorf("%v: %+v, want an empty chart", pts, c)
		}
		if !strings.Contains(c.Title, "kappa") || !strings.Contains(c.Title, "no value") {
			t.Errorf("empty title %q", c.Title)
		}
	}
	c := layoutChart("kappa", []Point{pt(0, 0.7)})
	mid := round1((plotTop + plotBottom) / 2)
	if c.Empty || c.Path != "M"+fmtCoord(plotRight)+" "+fmtCoord(mid) {
		t.Errorf("single point: path %q", c.Path)
	}
	if c.Last == nil || c.Last.X != plotRight || c.Last.Y != mid || len(c.Dots) != 1 {
		t.Errorf("single point: last %+v dots %+v", c.Last, c.Dots)
	}
	if c.MaxLabel != "0.7" || c.MinLabel != "" {
		t.Errorf("single point labels %q %q", c.MaxLabel, c.MinLabel)
	}
	// a flat series sits on the middle line
	c = layoutChart("kappa", []Point{pt(0, 0.5), pt(10, 0.5), pt(20, 0.5)})
	for _, p := range pathPoints(t, c.Path) {
		if p.Y != mid {
			t.Errorf("flat series point %+v off the middle line", p)
		}
	}
}

func TestFmtNum(t *testing.T) {
	for x, want := range map[float64]string{
		0: "0", 0.8: "0.8", 0.81234: "0.8123", 1: "1", 12.3456: "12.35", 1234.5: "1234", -0.02: "-0.02",
		2e7: "2e+07", 1e-5: "1e-05", math.NaN(): "—", math.Inf(1): "—",
	} {
		if got := fmtNum(x); got != want {
			t.Errorf("fmtNum(%v) = %q, want %q", x, got, want)
		}
	}
	for d, want := range map[time.Duration]string{
		45 * time.Second: "45s", 100 * time.Second: "1m40s", 12 * time.Minute: "12m", 2*time.Hour + 30*time.Minute: "2h30m", 3 * time.Hour: "3h",
	} {
		if got := fmtSpan(d); got != want {
			t.Errorf("fmtSpan(%v) = %q, want %q", d, got, want)
		}
	}
}

// pathPoints parses "M x y L x y ..." back into points.
func pathPoints(t *testing.T, d string) []xy {
	t.Helper()
	var out []xy
	f := strings.Fields(d)
	for i := 0; i+1 < len(f); i += 2 {
		var p xy
		if _, err := fmtSscan(strings.TrimLeft(f[i], "ML"), f[i+1], &p); err != nil {
			t.Fatalf("path %q: %v", d, err)
		}
		out = append(out, p)
	}
	if len(f)%2 != 0 {
		t.Fatalf("path %q: odd number of fields", d)
	}
	return out
}

func fmtSscan(xs, ys string, p *xy) (int, error) {
	x, err := strconv.ParseFloat(xs, 64)
	if err != nil {
		return 0, err
	}
	y, err := strconv.ParseFloat(ys, 64)
	if err != nil {
		return 1, err
	}
	p.X, p.Y = x, y
	return 2, nil
}
