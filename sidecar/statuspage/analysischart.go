package statuspage

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shadoweval/shadoweval/sidecar/analysis"
)

// The analysis charts, in SVG user units. Each row of the checks table has
// three: the interval now against the tolerance (intervalChart), how it
// narrowed (bandChart) and both arms' values on one axis (armsChart).
const (
	ivW, ivH           = 220.0, 38.0
	ivLeft, ivRight    = 6.0, 214.0
	ivTop, ivBottom    = 2.0, 24.0 // the failing zone's height
	ivAxisY            = 13.0      // the interval bar's centre
	ivBarH             = 8.0
	ivLabelY           = 35.0
	bandW, bandH       = 220.0, 56.0
	bandLeft           = 40.0
	bandRight          = bandW - 6
	bandTop, bandBot   = 4.0, bandH - 6
	armsW, armsH       = 150.0, 38.0
	armsLeft           = 8.0
	armsRight          = armsW - 8
	armsAxisY          = 14.0
	armsLabelY         = 35.0
	minLabelGap        = 11.0 // px between two y labels of the band chart (10px text)
	minTickGap         = 40.0 // px from an axis end to a centred label
	toleranceZoomLimit = 20.0 // a comparison axis spans at most ±20 tolerances
)

// tick is a label on an axis.
type tick struct {
	X, Y   float64
	Label  string
	Anchor string // text-anchor
}

// rect is an SVG rect.
type rect struct{ X, Y, W, H float64 }

// intervalChart is one check's interval now, drawn against its tolerance:
// the failing side shaded, the tolerance (or threshold) a line, the
// interval a bar and the estimate a dot. A comparison's axis is centred on
// 0.
type intervalChart struct {
	W, H      float64
	Title     string
	Empty     bool
	EmptyText string
	Verdict   string // badge class suffix, colours the bar
	Fail      rect   // the failing zone
	LimitX    float64
	HasZero   bool // a comparison: 0 marked at ZeroX
	ZeroX     float64
	Ticks     []tick
	Bar       *rect
	Arrows    []string // polygon points: the bar goes on past the axis
	Dot       *xy
}

func (intervalChart) AxisLeft() float64  { return ivLeft }
func (intervalChart) AxisRight() float64 { return ivRight }
func (intervalChart) AxisY() float64     { return ivAxisY }
func (intervalChart) Top() float64       { return ivTop }
func (intervalChart) Bottom() float64    { return ivBottom }
func (intervalChart) MidX() float64      { return (ivLeft + ivRight) / 2 }
func (intervalChart) EmptyY() float64    { return ivH/2 + 3.5 }

// linear maps [d0, d1] onto [r0, r1].
type linear struct{ d0, d1, r0, r1 float64 }

func (s linear) at(v float64) float64 {
	return s.r0 + (v-s.d0)/(s.d1-s.d0)*(s.r1-s.r0)
}

// limitOf is where a check fails (its Presentation's limit, −t or +t for a
// comparison, the threshold for an absolute check); failBelow tells the
// failing side.
func limitOf(c analysis.CheckResult) (limit float64, failBelow bool) {
	p := c.Presentation()
	return p.Limit, p.FailsBelow()
}

// comparisonHalfSpan is the half-width of a comparison's axis around 0:
// room for every value given and twice the tolerance, at most
// toleranceZoomLimit tolerances, so the tolerance stays visible however
// wide an early interval is.
func comparisonHalfSpan(tol float64, values ...float64) float64 {
	r := 2 * tol
	for _, v := range values {
		r = max(r, math.Abs(v))
	}
	r = niceUp(r * 1.1)
	if tol > 0 {
		r = min(r, niceUp(toleranceZoomLimit*tol))
	}
	if r <= 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		r = 0.05
	}
	return r
}

// axisOf is the value range both interval charts of a check draw, so the
// band over time reads as the interval now turned upright: ±R around 0
// for a relative estimate (arm − baseline); for the arm's own value a
// round range around the interval and the limit, within [0, 1] when they
// are.
func axisOf(c analysis.CheckResult, est, lo, hi float64) (d0, d1 float64) {
	p := c.Presentation()
	if p.Relative {
		r := comparisonHalfSpan(math.Abs(p.Limit), lo, hi, est)
		return -r, r
	}
	limit := p.Limit
	vlo, vhi := min(lo, hi, est, limit), max(lo, hi, est, limit)
	pad := max((vhi-vlo)*0.1, 0.01)
	d0, d1 = niceRange(vlo-pad, vhi+pad)
	if vlo >= 0 && vhi <= 1 {
		d0, d1 = max(d0, 0), min(d1, 1)
	}
	return d0, d1
}

func layoutInterval(c analysis.CheckResult, arm, baseline string) intervalChart {
	ch := intervalChart{W: ivW, H: ivH, Verdict: verdictClass(c.Verdict)}
	limit, failBelow := limitOf(c)
	relative := c.Presentation().Relative
	what := c.Name + ", " + arm
	if relative {
		what += " − " + baseline
	}
	if c.Estimate == nil || c.Interval == nil || !finite(*c.Estimate, c.Interval[0], c.Interval[1]) {
		ch.Empty, ch.EmptyText = true, "no interval yet"
		if c.Verdict == analysis.NoData {
			ch.EmptyText = "no data"
		}
		ch.Title = what + ": " + ch.EmptyText + "; " + limitText(c)
		return ch
	}
	est, lo, hi := *c.Estimate, c.Interval[0], c.Interval[1]
	d0, d1 := axisOf(c, est, lo, hi)
	s := linear{d0, d1, ivLeft, ivRight}
	if relative {
		zero := round1(s.at(0))
		ch.HasZero, ch.ZeroX = true, zero
		ch.Ticks = []tick{
			{X: ivLeft, Label: fmtSignedAxis(d0), Anchor: "start"},
			{X: zero, Label: "0", Anchor: "middle"},
			{X: ivRight, Label: fmtSignedAxis(d1), Anchor: "end"},
		}
	} else {
		ch.Ticks = []tick{{X: ivLeft, Label: fmtAxis(d0), Anchor: "start"}, {X: ivRight, Label: fmtAxis(d1), Anchor: "end"}}
		// clear of the end labels, which sit inside the axis ends
		if x := round1(s.at(limit)); x-ivLeft >= minTickGap && ivRight-x >= minTickGap {
			ch.Ticks = append(ch.Ticks, tick{X: x, Label: fmtAxis(limit), Anchor: "middle"})
		}
	}
	for i := range ch.Ticks {
		ch.Ticks[i].Y = ivLabelY
	}
	clampX := func(x float64) float64 { return round1(min(max(x, ivLeft), ivRight)) }
	lx := clampX(s.at(limit))
	ch.LimitX = lx
	if failBelow {
		ch.Fail = rect{X: ivLeft, Y: ivTop, W: round1(lx - ivLeft), H: ivBottom - ivTop}
	} else {
		ch.Fail = rect{X: lx, Y: ivTop, W: round1(ivRight - lx), H: ivBottom - ivTop}
	}
	x0, x1 := clampX(s.at(lo)), clampX(s.at(hi))
	ch.Bar = &rect{X: x0, Y: ivAxisY - ivBarH/2, W: round1(max(x1-x0, 1)), H: ivBarH}
	if s.at(lo) < ivLeft {
		ch.Arrows = append(ch.Arrows, arrow(ivLeft, -1))
	}
	if s.at(hi) > ivRight {
		ch.Arrows = append(ch.Arrows, arrow(ivRight, 1))
	}
	ch.Dot = &xy{clampX(s.at(est)), ivAxisY}
	ch.Title = what + ": estimate " + estText(c, est) + ", interval [" + estText(c, lo) + ", " + estText(c, hi) + "]; " +
		limitText(c) + "; " + verdictText(c.Verdict)
	return ch
}

// arrow points out of the axis at x, to the left (dir −1) or right.
func arrow(x, dir float64) string {
	tip := x + dir*4
	back := x - dir*3
	return fmtCoord(round1(tip)) + "," + fmtCoord(ivAxisY) + " " +
		fmtCoord(round1(back)) + "," + fmtCoord(ivAxisY-6) + " " +
		fmtCoord(round1(back)) + "," + fmtCoord(ivAxisY+6)
}

// estText writes a value on c's estimate's scale: signed when relative.
func estText(c analysis.CheckResult, v float64) string {
	if c.Presentation().Relative {
		return fmtSigned(v)
	}
	return fmtNum(v)
}

// bandPoint is one judgement of one check: its interval then.
type bandPoint struct {
	T           time.Time
	Est, Lo, Hi float64
	Valid       bool
}

// bandChart is how a check's interval narrowed: the interval a band over
// time, the estimate a line, the tolerance (or threshold) a dashed line with
// its failing side shaded. Drawing is clipped to the plot box by a nested
// svg (a clip-path would need ids and url()).
type bandChart struct {
	W, H      float64
	Title     string
	Empty     bool
	EmptyText string
	Fail      rect
	LimitY    float64
	HasZero   bool
	ZeroY     float64
	Labels    []tick
	Bands     []string // polygon points, one per run of judgements
	Bars      []rect   // a run of one judgement
	Path      string   // the estimate
	Last      *xy
}

func (bandChart) PlotLeft() float64   { return bandLeft }
func (bandChart) PlotRight() float64  { return bandRight }
func (bandChart) PlotTop() float64    { return bandTop }
func (bandChart) PlotBottom() float64 { return bandBot }
func (bandChart) PlotW() float64      { return bandRight - bandLeft }
func (bandChart) PlotH() float64      { return bandBot - bandTop }
func (bandChart) MidX() float64       { return (bandLeft + bandRight) / 2 }
func (bandChart) EmptyY() float64     { return bandH/2 + 3.5 }

// layoutBand draws pts on the value range of the interval now (axisOf),
// the last point's when the check has none: early, wider intervals run off
// the plot, which is how they narrowed.
func layoutBand(c analysis.CheckResult, pts []bandPoint) bandChart {
	ch := bandChart{W: bandW, H: bandH}
	limit, failBelow := limitOf(c)
	var valid int
	var last bandPoint
	for _, p := range pts {
		if p.Valid && finite(p.Est, p.Lo, p.Hi) {
			valid++
			last = p
		}
	}
	if valid == 0 {
		ch.Empty, ch.EmptyText = true, "no interval yet"
		if c.Verdict == analysis.NoData {
			ch.EmptyText = "no data"
		}
		ch.Title = c.Name + ": " + ch.EmptyText
		return ch
	}
	if c.Estimate != nil && c.Interval != nil && finite(*c.Estimate, c.Interval[0], c.Interval[1]) {
		last = bandPoint{Est: *c.Estimate, Lo: c.Interval[0], Hi: c.Interval[1]}
	}
	lo, hi := axisOf(c, last.Est, last.Lo, last.Hi)
	sy := linear{lo, hi, bandBot, bandTop}
	t0, t1 := pts[0].T, pts[len(pts)-1].T
	span := t1.Sub(t0)
	xOf := func(t time.Time) float64 {
		if span <= 0 {
			return bandRight
		}
		return round1(bandLeft + float64(t.Sub(t0))/float64(span)*(bandRight-bandLeft))
	}
	yOf := func(v float64) float64 { return round1(sy.at(v)) }

	ly := yOf(limit)
	ch.LimitY = ly
	if failBelow {
		ch.Fail = rect{X: bandLeft, Y: ly, W: bandRight - bandLeft, H: round1(bandBot - ly)}
	} else {
		ch.Fail = rect{X: bandLeft, Y: bandTop, W: bandRight - bandLeft, H: round1(ly - bandTop)}
	}
	relative := c.Presentation().Relative
	axisLabel := fmtAxis
	if relative {
		axisLabel = fmtSignedAxis
	}
	// The tolerance's label first: the axis ends' and 0's give way to it.
	var labels []tick
	addLabel := func(y float64, label string) {
		for _, l := range labels {
			if math.Abs(l.Y-y) < minLabelGap {
				return
			}
		}
		labels = append(labels, tick{Y: y, Label: label})
	}
	addLabel(ly+3, axisLabel(limit))
	addLabel(bandTop+4, axisLabel(hi))
	addLabel(bandBot+3, axisLabel(lo))
	if relative {
		zy := yOf(0)
		ch.HasZero, ch.ZeroY = true, zy
		addLabel(zy+3, "0")
	}
	for i := range labels {
		labels[i].X, labels[i].Anchor = bandLeft-4, "end"
	}
	ch.Labels = labels

	var path strings.Builder
	for i := 0; i < len(pts); {
		if !pts[i].Valid || !finite(pts[i].Est, pts[i].Lo, pts[i].Hi) {
			i++
			continue
		}
		j := i
		for j+1 < len(pts) && pts[j+1].Valid && finite(pts[j+1].Est, pts[j+1].Lo, pts[j+1].Hi) {
			j++
		}
		run := pts[i : j+1]
		if len(run) == 1 {
			x := xOf(run[0].T)
			yh, yl := yOf(run[0].Hi), yOf(run[0].Lo)
			ch.Bars = append(ch.Bars, rect{X: round1(x - 1.5), Y: yh, W: 3, H: round1(max(yl-yh, 1))})
		} else {
			var poly strings.Builder
			for _, p := range run {
				poly.WriteString(fmtCoord(xOf(p.T)) + "," + fmtCoord(yOf(p.Hi)) + " ")
			}
			for k := len(run) - 1; k >= 0; k-- {
				poly.WriteString(fmtCoord(xOf(run[k].T)) + "," + fmtCoord(yOf(run[k].Lo)))
				if k > 0 {
					poly.WriteByte(' ')
				}
			}
			ch.Bands = append(ch.Bands, poly.String())
		}
		for k, p := range run {
			if path.Len() > 0 {
				path.WriteByte(' ')
			}
			if k == 0 {
				path.WriteString("M")
			} else {
				path.WriteString("L")
			}
			path.WriteString(fmtCoord(xOf(p.T)) + " " + fmtCoord(yOf(p.Est)))
		}
		last = run[len(run)-1]
		i = j + 1
	}
	ch.Path = path.String()
	// outside the clipped plot, so the dot on its right edge shows whole
	ch.Last = &xy{xOf(last.T), round1(min(max(sy.at(last.Est), bandTop), bandBot))}
	first := firstValid(pts)
	title := c.Name + ": interval "
	if d := last.T.Sub(first.T); valid > 1 && d > 0 {
		title += "over " + fmtSpan(d) + " (" + plural(valid, "judgement") + "), from [" +
			estText(c, first.Lo) + ", " + estText(c, first.Hi) + "] to "
	}
	title += "[" + estText(c, last.Lo) + ", " + estText(c, last.Hi) + "], estimate " + estText(c, last.Est) + "; " + limitText(c)
	ch.Title = title
	return ch
}

func firstValid(pts []bandPoint) bandPoint {
	for _, p := range pts {
		if p.Valid && finite(p.Est, p.Lo, p.Hi) {
			return p
		}
	}
	return bandPoint{}
}

// armsChart puts the candidate's and the baseline's values of a check's
// metric on one axis: the candidate a dot, the baseline a ring around
// where it stands (so equal values read as a dot in its ring).
type armsChart struct {
	W, H      float64
	Title     string
	Empty     bool
	EmptyText string
	Ticks     []tick
	Cand      *xy
	Base      *xy
	HasLimit  bool // a limit on the arm's own value: it stands at LimitX
	LimitX    float64
}

func (armsChart) AxisLeft() float64    { return armsLeft }
func (armsChart) AxisRight() float64   { return armsRight }
func (armsChart) AxisY() float64       { return armsAxisY }
func (armsChart) MidX() float64        { return (armsLeft + armsRight) / 2 }
func (armsChart) EmptyY() float64      { return armsH/2 + 3.5 }
func (armsChart) TickTop() float64     { return armsAxisY - 3 }
func (armsChart) TickBottom() float64  { return armsAxisY + 3 }
func (armsChart) LimitTop() float64    { return armsAxisY - 10 }
func (armsChart) LimitBottom() float64 { return armsAxisY + 10 }

func layoutArms(c analysis.CheckResult, arm, baseline string) armsChart {
	ch := armsChart{W: armsW, H: armsH}
	var vals []float64
	for _, v := range []*float64{c.ArmValue, c.BaselineValue} {
		if v != nil && finite(*v) {
			vals = append(vals, *v)
		}
	}
	title := c.Metric + ": " + armText(arm, c.ArmValue, c.Samples.Arm) + "; " + armText(baseline, c.BaselineValue, c.Samples.Baseline)
	if len(vals) == 0 {
		ch.Empty, ch.EmptyText = true, "no data"
		ch.Title = title
		return ch
	}
	// A limit on the arm's own value stands on the arms' axis too.
	p := c.Presentation()
	absolute := !p.Relative
	limit := p.Limit
	if absolute {
		vals = append(vals, limit)
	}
	lo, hi := slices.Min(vals), slices.Max(vals)
	pad := max((hi-lo)*0.5, 0.02*max(1, math.Abs(lo), math.Abs(hi)))
	d0, d1 := niceRange(lo-pad, hi+pad)
	if lo >= 0 && hi <= 1 {
		d0, d1 = max(d0, 0), min(d1, 1) // a proportion's natural range
	}
	s := linear{d0, d1, armsLeft, armsRight}
	ch.Ticks = []tick{
		{X: armsLeft, Y: armsLabelY, Label: fmtAxis(d0), Anchor: "start"},
		{X: armsRight, Y: armsLabelY, Label: fmtAxis(d1), Anchor: "end"},
	}
	if c.ArmValue != nil && finite(*c.ArmValue) {
		ch.Cand = &xy{round1(s.at(*c.ArmValue)), armsAxisY}
	}
	if c.BaselineValue != nil && finite(*c.BaselineValue) {
		ch.Base = &xy{round1(s.at(*c.BaselineValue)), armsAxisY}
	}
	if absolute {
		ch.HasLimit, ch.LimitX = true, round1(s.at(limit))
		title += "; threshold " + fmtNum(limit)
	}
	ch.Title = title
	return ch
}

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// niceUp is the smallest 1, 2 or 5 × 10^k at or above x > 0.
func niceUp(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return x
	}
	e := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5} {
		if m*e >= x*(1-1e-12) {
			return cleanFloat(m * e)
		}
	}
	return cleanFloat(10 * e)
}

// niceRange widens [lo, hi] to multiples of a round step of about a
// quarter of its span, so the axis ends read as round numbers.
func niceRange(lo, hi float64) (float64, float64) {
	if !(hi > lo) {
		d := max(math.Abs(lo)*0.05, 0.01)
		lo, hi = lo-d, hi+d
	}
	st := niceUp((hi - lo) / 4)
	return cleanFloat(math.Floor(lo/st+1e-9) * st), cleanFloat(math.Ceil(hi/st-1e-9) * st)
}

// cleanFloat drops the float noise of a product (0.30000000000000004).
func cleanFloat(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
	return v
}

// fmtSignedAxis is fmtAxis with the sign written: "−0.4", "+0.4".
func fmtSignedAxis(x float64) string {
	s := fmtAxis(x)
	switch {
	case x == 0:
		return "0"
	case s[0] == '-':
		return "−" + s[1:]
	}
	return "+" + s
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}
