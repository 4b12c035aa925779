package analysis

import (
	"testing"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis/confseq"
	"github.com/shadoweval/shadoweval/testenv"
)

// Every kind config validates has a judge, and the analyses judge no kind
// config would refuse.
func TestKindsMatchConfig(t *testing.T) {
	testenv.SameKeys(t, "the analyses judge check kinds", checkKinds, config.CheckKinds())
}

// Each kind presents its results with the limit its verdicts are decided
// at: an interval entirely on the passing side of the limit passes, one
// entirely on the failing side fails.
func TestPresentationMatchesDecide(t *testing.T) {
	th := 0.8
	for _, tc := range []struct {
		check config.AnalysisCheck
		lower bool
	}{
		{config.AnalysisCheck{Name: "p", Metric: "precision", Tolerance: 0.02}, false},
		{config.AnalysisCheck{Name: "d", Metric: "delta_s_median", Tolerance: 0.03}, true},
		{config.AnalysisCheck{Name: "c", Metric: "coverage", Op: ">=", Threshold: th}, false},
		{config.AnalysisCheck{Name: "u", Metric: "under_refusal", Op: "<", Threshold: 0.1}, true},
	} {
		c := tc.check
		k := checkKinds[c.Kind()]
		r := CheckResult{Kind: c.Kind(), LowerIsBetter: tc.lower}
		k.describe(c, &r)
		p := r.Presentation()
		below, above := confseq.Interval{Lo: p.Limit - 0.2, Hi: p.Limit - 0.1}, confseq.Interval{Lo: p.Limit + 0.1, Hi: p.Limit + 0.2}
		failing, passing := above, below
		if p.FailsBelow() {
			failing, passing = below, above
		}
		if v, why := k.decide(c, tc.lower, failing); v != Fail {
			t.Errorf("%s: %v on the failing side of %v (%s): %s", c.Name, v, p, c.Kind(), why)
		}
		if v, why := k.decide(c, tc.lower, passing); v != Pass {
			t.Errorf("%s: %v on the passing side of %v (%s): %s", c.Name, v, p, c.Kind(), why)
		}
		if p.Relative != (c.Kind() == config.CheckComparison) {
			t.Errorf("%s: relative %v for a %s check", c.Name, p.Relative, c.Kind())
		}
	}
}
