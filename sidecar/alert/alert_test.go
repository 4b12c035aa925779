package alert

import (
	"bytes"
	stdjson "encoding/json"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/shadoweval/shadoweval/sidecar/gates"
)

// The NATS message and the webhook body carry the alert's own members in
// this order, with either JSON package, and none of the result's state,
// verdict, reason or interval.
func TestAlertJSON(t *testing.T) {
	at := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	res := gates.Result{
		Gate: "recall5_vs_live", Arm: "canary", Severity: "warning", Metric: "recall_at_5", Op: ">=", Window: "5m",
		CompareTo: "live", State: gates.Resolved, Verdict: gates.VerdictPass, Value: ptr(-0.01), Threshold: -0.02,
		Samples: 120, Interval: &[2]float64{-0.03, 0.01}, Since: at.Add(time.Hour), ActiveAt: at, Reason: "passes",
	}
	firing := Alert{Result: res, Status: StatusFiring, StartsAt: at}
	firing.CompareTo, firing.Value = "", nil
	resolved := Alert{Result: res, Status: StatusResolved, StartsAt: at, EndsAt: at.Add(time.Hour)}
	for _, c := range []struct {
		a    Alert
		want string
	}{
		{firing, `{"gate":"recall5_vs_live","arm":"canary","severity":"warning","metric":"recall_at_5","op":">=","window":"5m","status":"firing","value":null,"threshold":-0.02,"samples":120,"starts_at":"2031-03-04T05:06:07Z"}`},
		{resolved, `{"gate":"recall5_vs_live","arm":"canary","severity":"warning","metric":"recall_at_5","op":">=","window":"5m","compare_to":"live","status":"resolved","value":-0.01,"threshold":-0.02,"samples":120,"starts_at":"2031-03-04T05:06:07Z","ends_at":"2031-03-04T06:06:07Z"}`},
	} {
		b, err := json.Marshal(c.a)
		if err != nil || string(b) != c.want {
			t.Errorf("json.Marshal:\n got %s (%v)\nwant %s", b, err, c.want)
		}
		var escaped bytes.Buffer // encoding/json escapes <, > and & as ever
		stdjson.HTMLEscape(&escaped, []byte(c.want))
		b, err = stdjson.Marshal(c.a)
		if err != nil || string(b) != escaped.String() {
			t.Errorf("encoding/json:\n got %s (%v)\nwant %s", b, err, escaped.String())
		}
		var back Alert
		if err := json.Unmarshal([]byte(c.want), &back); err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(back); string(b) != c.want {
			t.Errorf("decoded and encoded again:\n got %s\nwant %s", b, c.want)
		}
	}
}

// Only a change to firing or resolved is an alert; firing starts with the
// breakage, resolved ends at the transition.
func TestOf(t *testing.T) {
	at := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	tr := gates.Transition{Result: gates.Result{Gate: "g", Arm: "canary", ActiveAt: at}, At: at.Add(time.Minute)}
	for _, s := range []gates.State{gates.Inconclusive, gates.OK, gates.Pending} {
		tr.State = s
		if _, ok := Of(tr); ok {
			t.Errorf("%s is an alert", s)
		}
	}
	tr.State = gates.Firing
	if a, ok := Of(tr); !ok || a.Status != StatusFiring || !a.StartsAt.Equal(at) || !a.EndsAt.IsZero() || a.Gate != "g" {
		t.Errorf("firing: %+v %v", a, ok)
	}
	tr.State = gates.Resolved
	if a, ok := Of(tr); !ok || a.Status != StatusResolved || !a.StartsAt.Equal(at) || !a.EndsAt.Equal(tr.At) {
		t.Errorf("resolved: %+v %v", a, ok)
	}
}
