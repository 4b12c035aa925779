package testenv

import (
	"context"
	"testing"
	"time"
)

// Timeout is how long helpers wait for something that should happen at
// once on a local server.
const Timeout = 10 * time.Second

// Context is a context that ends after timeout, or when the test ends.
func Context(t testing.TB, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// pollEvery only keeps a polling loop from spinning: no result depends on
// it.
const pollEvery = 2 * time.Millisecond

// Poll calls cond until it returns "" (done), then returns; when timeout
// passes first it fails the test with what and cond's last explanation.
func Poll(t testing.TB, timeout time.Duration, what string, cond func() string) {
	t.Helper()
	if why := Until(timeout, cond); why != "" {
		t.Fatalf("gave up after %v waiting for %s: %s", timeout, what, why)
	}
}

// Until calls cond until it returns "" or timeout passes, and returns
// cond's last answer: Poll for a caller that decides what a timeout
// means.
func Until(timeout time.Duration, cond func() string) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		why := cond()
		if why == "" {
			return ""
		}
		select {
		case <-ctx.Done():
			return why
		case <-tick.C:
		}
	}
}

// Eventually is Poll on a condition that explains nothing.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Poll(t, timeout, what, func() string {
		if cond() {
			return ""
		}
		return "not yet"
	})
}

// Receive is the next value of ch; when none comes within timeout it
// fails the test, saying it waited for what.
func Receive[T any](t testing.TB, ch <-chan T, timeout time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("gave up after %v waiting for %s", timeout, what)
		panic("unreachable")
	}
}

// Next receives one value from ch or fails the test after Timeout.
func Next[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	return Receive(t, ch, Timeout, "a value on the channel")
}
