package sidecar

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The first event of a kind is logged, the next ones are summed up at the
// flush, and after a quiet interval the next one is logged in full again.
func TestNotices(t *testing.T) {
	var buf bytes.Buffer
	n := newNotices(slog.New(slog.NewTextHandler(&buf, nil)))
	first := func(key string) bool { return n.first(key, slog.LevelWarn, "events rejected ("+key+")") }
	if !first("invalid_json") {
		t.Fatal("the first event is not to be logged")
	}
	for range 4 {
		if first("invalid_json") {
			t.Fatal("a second event is to be logged before the flush")
		}
	}
	if !first("too_large") {
		t.Fatal("the first event of another kind is not to be logged")
	}
	n.flush(time.Minute)
	out := buf.String()
	if !strings.Contains(out, `msg="events rejected (invalid_json): more in the last 1m0s" count=4`) || strings.Count(out, "\n") != 1 {
		t.Errorf("flush logged:\n%s", out)
	}
	if first("invalid_json") {
		t.Error("logged in full within a minute of the summary")
	}
	// too_large was quiet over the interval: its next event is logged.
	if !first("too_large") {
		t.Error("the first event after a quiet interval is not to be logged")
	}
	buf.Reset()
	n.flush(time.Minute) // invalid_json: 1 more; too_large: none more
	n.flush(time.Minute) // both quiet
	if !first("invalid_json") || !first("too_large") {
		t.Error("after quiet intervals, the next events are not logged in full")
	}
	if !strings.Contains(buf.String(), "count=1") || strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("flushes logged:\n%s", buf.String())
	}
}
