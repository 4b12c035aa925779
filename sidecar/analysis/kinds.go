package analysis

import (
	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis/confseq"
)

// checkKind is one kind of check: what its result shows, when it has
// data, the confidence sequence of its estimate and where that places
// it. Each kind lives in a file of its own.
type checkKind interface {
	// describe fills in what r is judged against (its tolerance, or op
	// and threshold).
	describe(c config.AnalysisCheck, r *CheckResult)
	// hasData tells whether the arms' samples of the metric give the
	// check anything to judge; a check without is no_data.
	hasData(s Samples) bool
	// waiting says why a check with data has no sequence yet, "" when it
	// has one.
	waiting(s Samples) string
	// bounds is the estimate and its confidence sequence, each side at
	// its level of lv; it fills in how r was paired.
	bounds(c config.AnalysisCheck, a *arms, lv confseq.Levels, r *CheckResult) (float64, confseq.Interval)
	// lowPasses says whether the lower bound is the one that passes the
	// check (the upper one then fails it), rather than the upper.
	lowPasses(c config.AnalysisCheck, lowerIsBetter bool) bool
	// tooFew says why the samples are too few for a verdict, "" when
	// they are enough.
	tooFew(c config.AnalysisCheck, s Samples) string
	// decide places the interval against the check's limit.
	decide(c config.AnalysisCheck, lowerIsBetter bool, iv confseq.Interval) (Verdict, string)
	// present is how a result of the kind shows (describe filled it in).
	present(r CheckResult) Presentation
}

// checkKinds are the check kinds the analyses judge, under the names
// config gives them (config.CheckKinds); judge dispatches through it.
// Each kind adds itself from its own file (in its init).
var checkKinds = map[string]checkKind{}

// Presentation is what a check's result shows whatever its kind: the
// presenters (the status page, eval's table, the demo, the limit metric)
// draw and word a check from it and never from its kind.
type Presentation struct {
	// Relative: the estimate is arm − baseline, read against 0; else it is
	// the arm's own value of the metric.
	Relative bool
	// Limit is the line the interval is judged against, on the estimate's
	// scale, and Op the passing side of it (">=", ">", "<=", "<"): the
	// check fails beyond the line on the other side.
	Limit float64
	Op    string
}

// FailsBelow tells whether the failing side of the limit is below it.
func (p Presentation) FailsBelow() bool { return p.Op == ">=" || p.Op == ">" }

// Presentation is how r shows, as its kind has it; the zero value for a
// kind this build does not know.
func (r CheckResult) Presentation() Presentation {
	if k := checkKinds[r.Kind]; k != nil {
		return k.present(r)
	}
	return Presentation{}
}
