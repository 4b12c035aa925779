package alert

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// inCI says whether the CI environment variable asks for every test to
// run: a missing tool is then a failure, not a skip.
func inCI() bool {
	v := strings.ToLower(strings.TrimSpace(os.Getenv("CI")))
	return v != "" && v != "0" && v != "false" && v != "no"
}

// needBinary finds the first of names on $PATH. When none is there it
// skips the test, or fails it under CI. The Makefile's deps target
// installs them (Debian packages prometheus and prometheus-alertmanager).
func needBinary(t *testing.T, pkg string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := strings.Join(names, " or ") + " is not installed (Debian package " + pkg + "; make deps installs it)"
	if inCI() {
		t.Fatalf("%s; CI is set, so this is a failure", msg)
	}
	t.Skipf("%s; skipping (set CI=true to make this a failure)", msg)
	return ""
}

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
