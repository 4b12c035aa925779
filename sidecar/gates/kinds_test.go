package gates

import (
	"testing"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/testenv"
)

// Every kind config validates has a judge, and the engine judges no kind
// config would refuse.
func TestKindsMatchConfig(t *testing.T) {
	testenv.SameKeys(t, "the engine judges gate kinds", kinds, config.GateKinds())
}

// Each kind names what it judges, and PointFails judges the values a
// presenter shows as the kind does: the arm's own, or its difference to
// the compare_to arm, which it never judges itself.
func TestKindsPresent(t *testing.T) {
	values := map[string]float64{"canary": 0.70, "live": 0.80}
	value := func(arm string) (float64, bool) { v, ok := values[arm]; return v, ok }
	own := config.Gate{Metric: "precision", Op: ">=", Threshold: 0.75}
	vs := config.Gate{Metric: "precision", Op: ">=", Threshold: -0.05, CompareTo: "live"}
	for _, tc := range []struct {
		g       config.Gate
		arm     string
		subject string
		fails   bool
	}{
		{own, "canary", "precision", true},
		{own, "live", "precision", false},
		{vs, "canary", "precision of canary − live", true},
		{vs, "live", "precision of live − live", false},     // never judged
		{vs, "shadow", "precision of shadow − live", false}, // no value
	} {
		if got := kinds[tc.g.Kind()].subject(&tc.g, tc.arm); got != tc.subject {
			t.Errorf("subject of %s on %s = %q, want %q", tc.g.Kind(), tc.arm, got, tc.subject)
		}
		if got := PointFails(&tc.g, tc.arm, value); got != tc.fails {
			t.Errorf("PointFails(%s on %s) = %v, want %v", tc.g.Kind(), tc.arm, got, tc.fails)
		}
	}
}
