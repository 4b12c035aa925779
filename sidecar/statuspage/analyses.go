package statuspage

import (
	"strconv"
	"time"

	"github.com/shadoweval/shadoweval/sidecar/analysis"
)

// AnalysisSource gives the canary analyses the page leads with (SPEC §6).
type AnalysisSource interface {
	Analyses() []AnalysisState
}

// AnalysisState is one analysis as the page shows it: its judgement now
// and its recorded judgements, oldest first.
type AnalysisState struct {
	Result  analysis.Result
	History []analysis.Point
}

// AnalysisList adapts a list of analyses, such as (*analysis.Manager).List,
// to an AnalysisSource.
type AnalysisList func() []*analysis.Analysis

// Analyses reads each analysis' result and history.
func (f AnalysisList) Analyses() []AnalysisState {
	list := f()
	out := make([]AnalysisState, 0, len(list))
	for _, an := range list {
		out = append(out, AnalysisState{Result: an.Result(), History: an.History()})
	}
	return out
}

// Option configures Handler.
type Option func(*handler)

// WithAnalyses makes the page lead with src's analyses: the running ones,
// then the ended ones collapsed. nil shows none.
func WithAnalyses(src AnalysisSource) Option {
	return func(h *handler) { h.analyses = src }
}

// The view models of the analysis section.
type (
	analysesView struct {
		Shown   bool // a source is set
		Running []analysisView
		Ended   []analysisView
	}
	analysisView struct {
		HeadID      string // of the heading, for aria-labelledby
		DetailsID   string // stable across refreshes, so an opened one stays open
		Name        string
		Verdict     string // badge class suffix
		VerdictText string
		Reason      string
		Arm         string
		Baseline    string
		CheckSet    string
		Since       time.Time
		Age         string // "12m ago"
		Ended       bool
		EndText     string
		Events      analysis.Samples
		Level       string
		Span        string // of the history chart
		EstHeader   string // "canary − live" when every check compares
		Checks      []checkView
	}
	checkView struct {
		Name, Metric string
		Verdict      string // badge class suffix
		VerdictText  string
		Reason       string
		ShowReason   bool // it says more than the numbers beside it
		NoData       bool
		Estimate     string // "" without one
		Interval     string
		Limit        string // "fails below −0.02", "needs ≥ 0.7"
		Paired       string // "paired by qid · 1234 pairs"; "" unpaired
		Now          intervalChart
		Over         bandChart
		Arms         armsChart
		ArmText      string
		BaseText     string
	}
)

func (h *handler) analysesView(now time.Time) analysesView {
	var v analysesView
	if h.analyses == nil {
		return v
	}
	v.Shown = true
	for _, st := range h.analyses.Analyses() {
		r := st.Result
		av := analysisView{
			DetailsID: "analysis-ended-" + r.Analysis,
			Name:      r.Analysis, Verdict: verdictClass(r.Verdict), VerdictText: verdictText(r.Verdict),
			Reason: r.Reason, Arm: r.Arm, Baseline: r.Baseline, CheckSet: r.CheckSet,
			Since: r.Since.UTC(), Events: r.Events,
		}
		hist := st.History
		if r.Ended == nil {
			av.Age = fmtSpan(max(now.Sub(r.Since), 0)) + " ago"
			// The band ends with the interval shown beside it.
			if len(hist) == 0 || now.After(hist[len(hist)-1].At) {
				hist = append(hist[:len(hist):len(hist)], pointOf(r, now))
			}
		} else {
			av.Ended = true
			av.EndText = "ended " + r.Ended.UTC().Format("2006-01-02 15:04:05 MST") + " after " + fmtSpan(max(r.Ended.Sub(r.Since), 0))
			if r.EndReason != "" && r.EndReason != "ended" {
				av.EndText += " (" + r.EndReason + ")"
			}
		}
		if len(hist) > 1 {
			av.Span = fmtSpan(hist[len(hist)-1].At.Sub(hist[0].At))
		}
		withData := 0
		av.EstHeader = r.Arm + " − " + r.Baseline
		for _, c := range r.Checks {
			if c.Verdict != analysis.NoData {
				withData++
			}
			if !c.Presentation().Relative {
				av.EstHeader = "Estimate"
			}
		}
		for ci, c := range r.Checks {
			if ci == 0 {
				av.Level = levelText(c.Level, r.Alpha, withData)
			}
			av.Checks = append(av.Checks, checkViewOf(r, ci, hist))
		}
		if av.Ended {
			v.Ended = append(v.Ended, av)
		} else {
			v.Running = append(v.Running, av)
		}
	}
	for i := range v.Running {
		v.Running[i].HeadID = "analysis-" + strconv.Itoa(i)
	}
	for i := range v.Ended {
		v.Ended[i].HeadID = "analysis-" + strconv.Itoa(len(v.Running)+i)
	}
	return v
}

// pointOf is r as a history point at t.
func pointOf(r analysis.Result, t time.Time) analysis.Point {
	p := analysis.Point{At: t, Verdict: r.Verdict, Checks: make([]analysis.CheckPoint, len(r.Checks))}
	for i, c := range r.Checks {
		p.Checks[i].Verdict = c.Verdict
		if c.Estimate != nil && c.Interval != nil {
			p.Checks[i] = analysis.CheckPoint{Estimate: *c.Estimate, Lo: c.Interval[0], Hi: c.Interval[1], Valid: true, Verdict: c.Verdict}
		}
	}
	return p
}

func checkViewOf(r analysis.Result, i int, hist []analysis.Point) checkView {
	c := r.Checks[i]
	cv := checkView{
		Name: c.Name, Metric: c.Metric, Verdict: verdictClass(c.Verdict), VerdictText: verdictText(c.Verdict),
		Reason: c.Reason, NoData: c.Verdict == analysis.NoData, Limit: limitText(c),
	}
	if c.Pairs > 0 {
		cv.Paired = "paired by " + c.Pairing + " · " + strconv.FormatInt(c.Pairs, 10) + " pairs"
	}
	// A decided check's reason restates its interval and tolerance.
	cv.ShowReason = c.Reason != "" && (c.Interval == nil || c.Verdict != analysis.Pass && c.Verdict != analysis.Fail)
	if c.Estimate != nil {
		cv.Estimate = estText(c, *c.Estimate)
	}
	if c.Interval != nil {
		cv.Interval = "[" + estText(c, c.Interval[0]) + ", " + estText(c, c.Interval[1]) + "]"
	}
	pts := make([]bandPoint, 0, len(hist))
	for _, p := range hist {
		bp := bandPoint{T: p.At}
		if i < len(p.Checks) && p.Checks[i].Valid {
			cp := p.Checks[i]
			bp.Est, bp.Lo, bp.Hi, bp.Valid = cp.Estimate, cp.Lo, cp.Hi, true
		}
		pts = append(pts, bp)
	}
	cv.Now = layoutInterval(c, r.Arm, r.Baseline)
	cv.Over = layoutBand(c, pts)
	cv.Arms = layoutArms(c, r.Arm, r.Baseline)
	cv.ArmText = armText(r.Arm, c.ArmValue, c.Samples.Arm)
	cv.BaseText = armText(r.Baseline, c.BaselineValue, c.Samples.Baseline)
	return cv
}

func armText(arm string, v *float64, n int64) string {
	s := arm + " —"
	if v != nil {
		s = arm + " " + fmtNum(*v)
	}
	return s + " · n " + strconv.FormatInt(n, 10)
}

// verdictClass maps a verdict to its badge; anything unexpected is grey.
func verdictClass(v analysis.Verdict) string {
	switch v {
	case analysis.Pass, analysis.Fail, analysis.Inconclusive, analysis.NoData:
		return string(v)
	}
	return "unknown"
}

func verdictText(v analysis.Verdict) string {
	if v == analysis.NoData {
		return "no data"
	}
	if v == "" {
		return "unknown"
	}
	return string(v)
}

// limitText says where a check fails, as the verdict rule of SPEC §5.2 reads.
func limitText(c analysis.CheckResult) string {
	p := c.Presentation()
	switch {
	case !p.Relative:
		return "needs " + opText(p.Op) + " " + fmtNum(p.Limit)
	case p.FailsBelow():
		return "fails below " + fmtSigned(p.Limit)
	}
	return "fails above " + fmtSigned(p.Limit)
}

// levelText says how sure each interval is: "99.92 % each side,
// anytime-valid (α 0.01, 12 checks)".
func levelText(level, alpha float64, m int) string {
	if level <= 0 {
		return ""
	}
	s := fmtNum(level*100) + " % each side, anytime-valid"
	if alpha > 0 {
		unit := " checks"
		if m == 1 {
			unit = " check"
		}
		s += " (α " + fmtNum(alpha) + ", " + strconv.Itoa(max(m, 1)) + unit + ")"
	}
	return s
}

// fmtSigned formats a difference with its sign: "+0.012", "−0.031", "0".
func fmtSigned(x float64) string {
	s := fmtNum(x)
	switch {
	case s == "0" || s == "—":
		return s
	case s[0] == '-':
		return "−" + s[1:]
	}
	return "+" + s
}
