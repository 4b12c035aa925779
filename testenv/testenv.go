// Package testenv is the test environment every package's tests share
// (and the rollouts module's: it is not internal): a real nats-server
// started in process, core or JetStream, on a random port with its store
// in t.TempDir() (never a mock); connections and subscriptions that end
// with the test; a throw-away TLS PKI; the real outside programs,
// Alertmanager started and promtool, chromium found, a test that needs
// one being skipped when it is not installed and failed instead under CI,
// where make deps installs them all; a fake clock; and the waiting: every
// helper waits on a channel or polls a condition under a deadline, none
// sleeps to let time pass.
//
// testenv imports no package of this module, so that the tests of every
// package (stream's and sidecar/alert's own included) can use it; the
// shadoweval app itself is started by testenv/apptest. Production code
// must import neither.
package testenv

import (
	"bytes"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// SameKeys fails the test unless the keys of m, sorted, are want: a
// registry of the names its package handles against the list of the names
// another package gives (what: who handles m's names).
func SameKeys[V any](t testing.TB, what string, m map[string]V, want []string) {
	t.Helper()
	if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, want) {
		t.Errorf("%s %v; want %v", what, got, want)
	}
}

// InCI says whether $CI is set to something true.
func InCI() bool {
	v := strings.ToLower(strings.TrimSpace(os.Getenv("CI")))
	return v != "" && v != "0" && v != "false" && v != "no"
}

// NeedBinary finds the first of names on $PATH. When none is there it
// skips the test, or fails it under CI; pkg is the Debian package that has
// it (make deps installs it).
func NeedBinary(t testing.TB, pkg string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := strings.Join(names, " or ") + " is not installed (Debian package " + pkg + "; make deps installs it)"
	if InCI() {
		t.Fatalf("%s; CI is set, so this is a failure", msg)
	}
	t.Skipf("%s; skipping (set CI=true to make this a failure)", msg)
	return ""
}

// Promtool is the promtool of Debian's prometheus package (NeedBinary).
func Promtool(t testing.TB) string {
	t.Helper()
	return NeedBinary(t, "prometheus", "promtool")
}

// Chromium is the headless browser to run: $CHROMIUM when set, else
// chromium or chromium-browser on $PATH (NeedBinary).
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	return NeedBinary(t, "chromium", "chromium", "chromium-browser")
}

// AddSeedFiles adds the files that match each pattern (filepath.Glob) to
// f's seed corpus and returns their contents, in order. A pattern that
// matches no file fails the test: a moved corpus must not leave the fuzzer
// unseeded unnoticed.
func AddSeedFiles(f *testing.F, patterns ...string) [][]byte {
	f.Helper()
	var seeds [][]byte
	for _, pattern := range patterns {
		names, _ := filepath.Glob(pattern) // a malformed pattern matches nothing
		if len(names) == 0 {
			f.Fatalf("no seed file matches %s", pattern)
		}
		for _, name := range names {
			data, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
			seeds = append(seeds, data)
		}
	}
	return seeds
}

// SyncBuffer collects a process's output, safe to read while it writes.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// FreeAddr is a 127.0.0.1 address whose port was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Tail is the last n bytes of s, marked with "…" when cut.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// Between is the part of s after the first a and before the next b (the
// rest of s when no b follows; "" when there is no a).
func Between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	if j := strings.Index(s, b); j >= 0 {
		return s[:j]
	}
	return s
}

// ClockBase is where a FakeClock starts unless told otherwise: a fixed
// instant, so that windows and buckets never depend on when a test runs.
var ClockBase = time.Date(2031, 3, 4, 5, 6, 0, 0, time.UTC)

// FakeClock is a clock that moves only when the test says so: the app's
// Options.Now and the events' ts.
type FakeClock struct{ ns atomic.Int64 }

// NewFakeClock is a FakeClock at start (ClockBase when zero).
func NewFakeClock(start time.Time) *FakeClock {
	if start.IsZero() {
		start = ClockBase
	}
	c := &FakeClock{}
	c.Set(start)
	return c
}

// Now is the clock's time, in UTC.
func (c *FakeClock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Advance moves the clock by d.
func (c *FakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// Set puts the clock at t.
func (c *FakeClock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Percentile is numpy.percentile(values, 100q) with its default 'linear'
// method, by sorting: interpolation between the order statistics around
// q·(n−1). The reference for the quantiles the code works out otherwise.
func Percentile(values []float64, q float64) float64 {
	s := slices.Clone(values)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[i]
	}
	return s[i] + (s[i+1]-s[i])*(pos-float64(i))
}

// WriteFile writes data to dir/name, failing the test if it cannot, and
// returns the path: the set-up of a test that reads a file.
func WriteFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
