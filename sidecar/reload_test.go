package sidecar_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/testenv"
)

// TestGoldReload: POST /-/reload swaps in a good file and refuses a bad one,
// keeping the old set, with the gold metrics telling which happened.
func TestGoldReload(t *testing.T) {
	t.Parallel()
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl"})

	for _, path := range []string{"/-/ready", "/-/healthy"} {
		if code, body := h.Get(path); code != http.StatusOK {
			t.Errorf("GET %s: %d %s, want 200", path, code, body)
		}
	}
	h.CheckMetric("shadoweval_gold_items", nil, 6)
	h.CheckMetric("shadoweval_gold_last_reload_successful", nil, 1)
	h.CheckMetric("shadoweval_gold_reloads_total", map[string]string{"result": "success"}, 1)
	h.CheckMetric("shadoweval_gold_reloads_total", map[string]string{"result": "failure"}, 0)

	// N1 is not in gold_v1: unlabeled.
	h.PublishJSON("rag.trace.g", goodTrace("A1"))
	h.PublishJSON("rag.trace.g", goodTrace("N1"))
	h.waitEvents("g", map[string]int64{"scored": 1, "unlabeled": 1})

	// A good file: N1 is scored from now on.
	replaceFile(t, "testdata/gold_v2.jsonl", h.GoldPath)
	if code, body := h.Post("/-/reload"); code != http.StatusOK {
		t.Fatalf("POST /-/reload with a good file: %d %s", code, body)
	}
	h.CheckMetric("shadoweval_gold_items", nil, 7)
	h.CheckMetric("shadoweval_gold_last_reload_successful", nil, 1)
	h.CheckMetric("shadoweval_gold_reloads_total", map[string]string{"result": "success"}, 2)
	h.PublishJSON("rag.trace.g", goodTrace("N1"))
	h.waitEvents("g", map[string]int64{"scored": 2, "unlabeled": 1})

	// A bad file: refused with its line, the old set stays.
	replaceFile(t, "testdata/gold_bad.jsonl", h.GoldPath)
	code, body := h.Post("/-/reload")
	if code < 400 {
		t.Errorf("POST /-/reload with a bad file: status %d, want an error", code)
	}
	if msg := string(body); !strings.Contains(msg, h.GoldPath+":3:") || !strings.Contains(msg, "answerable") {
		t.Errorf("POST /-/reload with a bad file says %q, want the file, line 3 and the field", msg)
	}
	h.CheckMetric("shadoweval_gold_items", nil, 7)
	h.CheckMetric("shadoweval_gold_last_reload_successful", nil, 0)
	h.CheckMetric("shadoweval_gold_reloads_total", map[string]string{"result": "failure"}, 1)
	h.CheckMetric("shadoweval_gold_reloads_total", map[string]string{"result": "success"}, 2)
	h.PublishJSON("rag.trace.g", goodTrace("N1")) // still known
	h.waitEvents("g", map[string]int64{"scored": 3, "unlabeled": 1})
	if code, body := h.Get("/-/ready"); code != http.StatusOK {
		t.Errorf("GET /-/ready after a refused reload: %d %s, want 200 (the old set is in force)", code, body)
	}

	// Fixed again.
	replaceFile(t, "testdata/gold_v1.jsonl", h.GoldPath)
	if code, body := h.Post("/-/reload"); code != http.StatusOK {
		t.Fatalf("POST /-/reload with a good file: %d %s", code, body)
	}
	h.CheckMetric("shadoweval_gold_items", nil, 6)
	h.CheckMetric("shadoweval_gold_last_reload_successful", nil, 1)
	h.PublishJSON("rag.trace.g", goodTrace("N1"))
	h.waitEvents("g", map[string]int64{"scored": 3, "unlabeled": 2})
}

// TestGoldWatch: a change of the gold file is picked up without a signal
// or a request, good or bad.
func TestGoldWatch(t *testing.T) {
	t.Parallel()
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl", goldWatch: 5 * time.Millisecond})
	h.CheckMetric("shadoweval_gold_items", nil, 6)

	replaceFile(t, "testdata/gold_v2.jsonl", h.GoldPath)
	h.WaitMetric("shadoweval_gold_items", nil, 7)
	h.PublishJSON("rag.trace.w", goodTrace("N1"))
	h.waitEvents("w", map[string]int64{"scored": 1})

	replaceFile(t, "testdata/gold_bad.jsonl", h.GoldPath)
	h.WaitMetric("shadoweval_gold_reloads_total", map[string]string{"result": "failure"}, 1)
	h.WaitMetric("shadoweval_gold_last_reload_successful", nil, 0)
	h.CheckMetric("shadoweval_gold_items", nil, 7)
	h.PublishJSON("rag.trace.w", goodTrace("N1"))
	h.waitEvents("w", map[string]int64{"scored": 2})
}

// TestStartRefusesBadGold: Start fails with an error naming the file (and
// the line, for a malformed row) and the app is not left running.
func TestStartRefusesBadGold(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := testenv.RunBasic(t).ClientURL()
	cases := []struct {
		name, gold string
		want       []string
	}{
		{"missing", filepath.Join(dir, "nope.jsonl"), []string{filepath.Join(dir, "nope.jsonl")}},
		{"malformed", copyFile(t, "testdata/gold_bad.jsonl", dir, "bad.jsonl"), []string{filepath.Join(dir, "bad.jsonl") + ":3:", "answerable"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			app, logs := startFailsLogged(t, testConfig(t, url, tc.gold), tc.want...)
			// No gold set was ever in force: the log must not claim one is.
			if log := logs.String(); !strings.Contains(log, "no gold set is in force") || strings.Contains(log, "previous gold set") {
				t.Errorf("log of a refused gold file at start:\n%s", log)
			}
			if app.Addr() != "" {
				t.Errorf("after a failed Start: Addr() = %q; want no listener", app.Addr())
			}
			if err := app.Stop(testenv.Context(t, waitTimeout)); err != nil {
				t.Errorf("Stop after a failed Start: %v", err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.jsonl")); err == nil {
		t.Error("Start created the missing gold file")
	}
}
