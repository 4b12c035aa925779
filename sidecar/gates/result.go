package gates

import (
	"fmt"
	"strconv"
	"time"
)

// State is the state of one gate for one arm.
type State int

// States of a gate (see the package documentation for the transitions).
const (
	Inconclusive State = iota
	OK
	Pending
	Firing
	Resolved
)

var stateNames = [...]string{"inconclusive", "ok", "pending", "firing", "resolved"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText writes the state as its name.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state name.
func (s *State) UnmarshalText(b []byte) error {
	for i, n := range stateNames {
		if n == string(b) {
			*s = State(i)
			return nil
		}
	}
	return fmt.Errorf("gates: unknown state %q", b)
}

// Verdict is the outcome of a gate or of an arm over a window.
type Verdict string

// Verdicts.
const (
	VerdictPass         Verdict = "pass"
	VerdictFail         Verdict = "fail"
	VerdictInconclusive Verdict = "inconclusive"
)

// verdictOf is a gate's own verdict in state s.
func verdictOf(s State) Verdict {
	switch s {
	case Pending, Firing:
		return VerdictFail
	case OK, Resolved:
		return VerdictPass
	}
	return VerdictInconclusive
}

// Result is the state of one gate for one arm after the last evaluation.
// It is the one record of a gate's state: the alerts (package
// sidecar/alert) carry it, the status page shows it and the gate metrics
// export it, so a field added here reaches them all.
type Result struct {
	Gate      string `json:"gate"`
	Metric    string `json:"metric"`
	Op        string `json:"op"`
	Window    string `json:"window"`
	Severity  string `json:"severity"`
	Arm       string `json:"arm"`
	CompareTo string `json:"compare_to,omitempty"`
	// Subject names what the gate judges on the arm, in words, as its
	// kind has it: "precision", "recall_at_5 of canary − live".
	Subject string `json:"-"`
	State   State  `json:"state"`
	// Verdict is this gate's own verdict (fail while pending or firing).
	Verdict Verdict `json:"verdict"`
	// Value is the point value (arm − compare_to arm with compare_to); nil
	// when there is none.
	Value     *float64 `json:"value"`
	Threshold float64  `json:"threshold"`
	// Samples is the sample count of the metric (the smaller of the two
	// arms' with compare_to).
	Samples int64 `json:"samples"`
	// Interval is the Wilson (Newcombe with compare_to) interval judged,
	// when the gate has a confidence on a proportion.
	Interval *[2]float64 `json:"interval,omitempty"`
	// Since is when the gate entered State; ActiveAt when the current
	// breakage was first seen (zero when not pending, firing or resolved).
	Since    time.Time `json:"since,omitzero"`
	ActiveAt time.Time `json:"active_at,omitzero"`
	// Reason says in words why the gate is in its state.
	Reason string `json:"reason"`
}

// Transition is a change of state of one gate for one arm, made by the
// evaluation at At.
type Transition struct {
	Result
	From State     `json:"from"`
	At   time.Time `json:"at"`
}
