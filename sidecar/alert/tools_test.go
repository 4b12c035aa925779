package alert

import (
	"testing"
	"time"
)

// waitFor polls cond until it holds or d passes, then fails with what.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not a timing assumption
	}
}
