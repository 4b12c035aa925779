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
}

// checkKinds are the check kinds the analyses judge, under the names
// config gives them (config.CheckKinds); judge dispatches through it.
var checkKinds = map[string]checkKind{
	config.CheckComparison: comparison{},
	config.CheckAbsolute:   absolute{},
}
