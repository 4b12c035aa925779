package window

import (
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/vocab"
)

func TestOutcomeCounter(t *testing.T) {
	c := NewOutcomeCounter([]Spec{{Name: "1m", Length: time.Minute, Resolution: 10 * time.Second}, {Name: "5m", Length: 5 * time.Minute, Resolution: time.Minute}})
	t0 := time.Unix(1_800_000_000, 0)
	c.Count("live", vocab.Scored, t0)
	c.Count("live", vocab.Scored, t0.Add(5*time.Second))
	c.Count("live", vocab.Late, t0.Add(30*time.Second))
	c.Count("canary", vocab.Rejected, t0)
	tests := []struct {
		arm, window string
		at          time.Duration
		want        OutcomeCounts
	}{
		{"live", "1m", 30 * time.Second, OutcomeCounts{vocab.Scored: 2, vocab.Late: 1}},
		{"live", "1m", 65 * time.Second, OutcomeCounts{vocab.Late: 1}}, // t0's bucket has left the minute
		{"live", "5m", 65 * time.Second, OutcomeCounts{vocab.Scored: 2, vocab.Late: 1}},
		{"live", "5m", 6 * time.Minute, OutcomeCounts{}},
		{"canary", "1m", 0, OutcomeCounts{vocab.Rejected: 1}},
		{"shadow", "1m", 0, OutcomeCounts{}},
		{"live", "1h", 0, OutcomeCounts{}},
	}
	for _, tt := range tests {
		if got := c.Counts(tt.arm, tt.window, t0.Add(tt.at)); got != tt.want {
			t.Errorf("Counts(%s, %s, +%v) = %v, want %v", tt.arm, tt.window, tt.at, got, tt.want)
		}
	}
	// A bucket slot reused after a full turn starts from zero.
	c.Count("live", vocab.Duplicate, t0.Add(60*time.Second))
	if got := c.Counts("live", "1m", t0.Add(60*time.Second)); got != (OutcomeCounts{vocab.Late: 1, vocab.Duplicate: 1}) {
		t.Errorf("after wrap: %v", got)
	}
	if m := (OutcomeCounts{vocab.Scored: 3}).Map(); m["scored"] != 3 || len(m) != len(vocab.Outcomes) {
		t.Errorf("Map() = %v", m)
	}
}

// TestOutcomeCounterOldTime: a count at a time older than a window's span
// (a replay counting at first-arrival times) does not wipe the newer
// bucket in that window's slot.
func TestOutcomeCounterOldTime(t *testing.T) {
	c := NewOutcomeCounter([]Spec{{Name: "1m", Length: time.Minute, Resolution: 10 * time.Second}, {Name: "5m", Length: 5 * time.Minute, Resolution: time.Minute}})
	t0 := time.Unix(1_800_000_000, 0)
	c.Count("live", vocab.Scored, t0.Add(60*time.Second))
	c.Count("live", vocab.Late, t0) // same 1m slot, a turn older
	if got := c.Counts("live", "1m", t0.Add(60*time.Second)); got != (OutcomeCounts{vocab.Scored: 1}) {
		t.Errorf("1m: %v, want the newer bucket kept", got)
	}
	if got := c.Counts("live", "5m", t0.Add(60*time.Second)); got != (OutcomeCounts{vocab.Scored: 1, vocab.Late: 1}) {
		t.Errorf("5m: %v, want both", got)
	}
}
