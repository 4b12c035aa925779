package statuspage

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Geometry of a chart, in SVG user units (= CSS px at the page's scale).
// The plot area is the box [plotLeft, plotRight] × [plotTop, plotBottom];
// the left margin holds the max and min labels.
const (
	chartW      = 260.0
	chartH      = 46.0
	plotLeft    = 54.0
	plotRight   = chartW - 8
	plotTop     = 6.0
	plotBottom  = chartH - 6
	labelRightX = plotLeft - 5
)

// chart is a laid-out sparkline, ready for the template.
type chart struct {
	W, H       float64
	Path       string // polyline of the valid points; "M" starts a new run after a gap
	Dots       []xy   // valid points with no valid neighbour (a run of one)
	Last       *xy    // the last valid point, marked
	MaxLabel   string // y-axis labels: the max and min of the valid values
	MinLabel   string
	MaxY, MinY float64 // the labels' gridlines
	Title      string  // text alternative
	Empty      bool    // no valid value at all
}

type xy struct{ X, Y float64 }

// Fixed template inputs (the template cannot do arithmetic).
func (c chart) LabelX() float64     { return labelRightX }
func (c chart) PlotLeft() float64   { return plotLeft }
func (c chart) PlotRight() float64  { return plotRight }
func (c chart) MaxLabelY() float64  { return plotTop + 4 }
func (c chart) MinLabelY() float64  { return plotBottom + 3 }
func (c chart) EmptyTextX() float64 { return (plotLeft + plotRight) / 2 }
func (c chart) EmptyTextY() float64 { return (plotTop+plotBottom)/2 + 4 }

// usable reports whether p carries a value to draw.
func usable(p Point) bool {
	return p.Valid && !math.IsNaN(p.Value) && !math.IsInf(p.Value, 0)
}

// layoutChart maps the points (oldest first) of metric onto the plot area:
// x by time, from the first point's (left) to the last one's (right), a
// lone point on the right edge; y by value, from the min of the valid
// values (bottom) to their max (top), a flat series on the middle line.
// Points without a value are skipped and break the line.
func layoutChart(metric string, pts []Point) chart {
	c := chart{W: chartW, H: chartH, MaxY: plotTop, MinY: plotBottom}
	lo, hi := math.Inf(1), math.Inf(-1)
	var valid int
	for _, p := range pts {
		if usable(p) {
			lo, hi = min(lo, p.Value), max(hi, p.Value)
			valid++
		}
	}
	if valid == 0 {
		c.Empty = true
		c.Title = metric + ": no value recorded yet"
		return c
	}
	t0, t1 := pts[0].T, pts[len(pts)-1].T
	span := t1.Sub(t0)
	xOf := func(t time.Time) float64 {
		if span <= 0 {
			return plotRight
		}
		return plotLeft + float64(t.Sub(t0))/float64(span)*(plotRight-plotLeft)
	}
	yOf := func(v float64) float64 {
		if hi == lo {
			return (plotTop + plotBottom) / 2
		}
		return plotTop + (hi-v)/(hi-lo)*(plotBottom-plotTop)
	}
	var b strings.Builder
	var last Point
	for i, p := range pts {
		if !usable(p) {
			continue
		}
		pt := xy{round1(xOf(p.T)), round1(yOf(p.Value))}
		prevOK := i > 0 && usable(pts[i-1])
		nextOK := i+1 < len(pts) && usable(pts[i+1])
		if prevOK {
			b.WriteString(" L")
		} else {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString("M")
		}
		b.WriteString(fmtCoord(pt.X))
		b.WriteByte(' ')
		b.WriteString(fmtCoord(pt.Y))
		if !prevOK && !nextOK {
			c.Dots = append(c.Dots, pt)
		}
		c.Last = &pt
		last = p
	}
	c.Path = b.String()
	c.MaxLabel, c.MinLabel = fmtAxis(hi), fmtAxis(lo)
	if hi == lo {
		// one level: both labels on the middle line would overlap
		c.MinLabel = ""
		c.MaxY = (plotTop + plotBottom) / 2
		c.MinY = c.MaxY
	}
	title := metric + ": last " + fmtNum(last.Value) + ", min " + fmtNum(lo) + ", max " + fmtNum(hi) +
		", " + strconv.Itoa(valid) + " of " + strconv.Itoa(len(pts)) + " points with a value"
	if span > 0 {
		title += ", over the last " + fmtSpan(span)
	}
	c.Title = title
	return c
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

func fmtCoord(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// fmtNum formats a metric value for people: 4 significant digits, no
// exponent below 1e6.
func fmtNum(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "—"
	case x == 0:
		return "0"
	case math.Abs(x) >= 1e6 || math.Abs(x) < 1e-4:
		return strconv.FormatFloat(x, 'g', 3, 64)
	case math.Abs(x) >= 1000:
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// fmtAxis formats an axis label: 3 significant digits, to fit the margin.
func fmtAxis(x float64) string {
	if math.Abs(x) >= 1000 && math.Abs(x) < 1e6 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// fmtSpan formats a history span: "45s", "1m40s", "12m", "2h30m".
func fmtSpan(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + "s"
	case d < 10*time.Minute:
		d = d.Round(time.Second)
		m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
		if s == 0 {
			return strconv.Itoa(m) + "m"
		}
		return strconv.Itoa(m) + "m" + strconv.Itoa(s) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Round(time.Minute)/time.Minute)) + "m"
	}
	d = d.Round(time.Minute)
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 {
		return strconv.Itoa(h) + "h"
	}
	return strconv.Itoa(h) + "h" + strconv.Itoa(m) + "m"
}
