package sidecar_test

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/config"
)

// TestUnknownQIDsAreUnlabeled: events whose qid is not in the gold set are
// counted unlabeled, in the windows API and in shadoweval_events_total,
// and scored in no metric.
func TestUnknownQIDsAreUnlabeled(t *testing.T) {
	t.Parallel()
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl"})
	h.PublishJSON("rag.trace.u", goodTrace("A1"))
	for _, qid := range []string{"Z1", "Z2", "a1"} { // a1: qids are case-sensitive
		ev := goodTrace("A1")
		ev.QID = qid
		h.PublishJSON("rag.trace.u", ev)
	}
	// q_id is the alias of qid: unknown all the same.
	h.Publish("rag.trace.u", []byte(`{"q_id":"Z4","retrieved_ids":["p1#1"],"answer_json":{"claim":"x","citations":["p1#1"]}}`))

	// The same known event alone, in another arm, for reference.
	h.PublishJSON("rag.trace.ref", goodTrace("A1"))

	rep := h.waitEvents("u", map[string]int64{"scored": 1, "unlabeled": 4})
	ref := h.waitEvents("ref", map[string]int64{"scored": 1})
	if d := diffMetrics(ref, rep); len(d) > 0 {
		t.Errorf("unlabeled events moved metrics:\n%s", strings.Join(d, "\n"))
	}
	checkSamples(t, rep, "precision", 1, "")
	checkValue(t, rep, "precision", 1)
	h.CheckMetric("shadoweval_events_total", map[string]string{"kind": "trace", "arm": "u", "outcome": "unlabeled"}, 4)
	h.CheckMetric("shadoweval_events_total", map[string]string{"kind": "trace", "arm": "u", "outcome": "scored"}, 1)
}

// TestArmResolution: the arm is the event's arm field, else the last token
// of the subject, else live.
func TestArmResolution(t *testing.T) {
	t.Parallel()
	t.Run("field_then_subject", func(t *testing.T) {
		t.Parallel()
		h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl"})
		ev := goodTrace("A1")
		ev.Arm = "bar"
		h.PublishJSON("rag.trace.foo", ev) // field wins
		h.PublishJSON("rag.trace.foo", goodTrace("A2"))
		h.PublishJSON("rag.trace.foo", goodTrace("U1"))
		h.PublishJSON("rag.trace.deep.baz", goodTrace("A1")) // last token

		h.waitEvents("bar", map[string]int64{"scored": 1})
		h.waitEvents("foo", map[string]int64{"scored": 2})
		h.waitEvents("baz", map[string]int64{"scored": 1})
		if rep, ok := h.report("live"); ok {
			t.Errorf("arm live has events %v: every event named its arm", rep.Events)
		}
		if got := samples(t, h.mustReport("foo"), "over_refusal"); got != 1 {
			t.Errorf("arm foo: over_refusal has %d samples, want 1 (A2 only)", got)
		}

		// Split halves take their arm the same way, and join on it.
		ret := event{QID: "A1", RequestID: "r1", Arm: "qux", RetrievedIDs: []string{"p1#1"}}
		ans := event{QID: "A1", RequestID: "r1", Answer: &answer{Claim: "Alpha rejects null keys.", Citations: []string{"p1#1"}}}
		h.PublishJSON("rag.retrieval.foo", ret)
		h.waitPending(1)
		h.PublishJSON("rag.answer.qux", ans)
		h.waitEvents("qux", map[string]int64{"scored": 1})
		h.waitPending(0)
	})
	t.Run("default_live", func(t *testing.T) {
		t.Parallel()
		// A one-token subject names no arm.
		h := startApp(t, appOptions{embedded: true, goldFile: "testdata/gold_v1.jsonl", configure: func(c *config.Config) {
			c.Subjects.Trace = "ragtrace"
		}})
		h.PublishJSON("ragtrace", goodTrace("A1"))
		ev := goodTrace("A2")
		ev.Arm = "canary"
		h.PublishJSON("ragtrace", ev)
		h.waitEvents("live", map[string]int64{"scored": 1})
		h.waitEvents("canary", map[string]int64{"scored": 1})
		if rep, ok := h.report("ragtrace"); ok {
			t.Errorf("a one-token subject became arm ragtrace: %v", rep.Events)
		}
	})
}

// TestKeyedSubjectsKeepTheEventsArm: events published to a cluster's keyed
// subjects (PREFIX.<arm>.<key>) on a single replica count under the arm
// they name; the key tokens never take arm places, so limits.max_arms is
// not filled by them and nothing folds into _other.
func TestKeyedSubjectsKeepTheEventsArm(t *testing.T) {
	t.Parallel()
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl", configure: func(c *config.Config) {
		c.Limits.MaxArms = 3
	}})
	const n = 8 // more distinct keys than limits.max_arms
	for _, arm := range []string{"canary", "live"} {
		for i := range n {
			ev := goodTrace("A1")
			ev.Arm = arm
			h.PublishJSON("rag.trace."+arm+".key"+strconv.Itoa(i), ev)
		}
	}
	h.waitEvents("canary", map[string]int64{"scored": n})
	h.waitEvents("live", map[string]int64{"scored": n})
	var arms []struct {
		Arm string `json:"arm"`
	}
	h.GetJSON("/api/v1/windows?window=5m", http.StatusOK, &arms)
	var names []string
	for _, a := range arms {
		names = append(names, a.Arm)
	}
	if !slices.Equal(names, []string{"canary", "live"}) {
		t.Errorf("arms %v, want [canary live]", names)
	}
	// A misspelt parameter would answer every type: it is refused.
	if code, out := h.Get("/api/v1/windows?arm=canary&window=5m&typ=code"); code != http.StatusBadRequest || !strings.Contains(string(out), `unknown parameter \"typ\"`) {
		t.Errorf("GET /api/v1/windows with typ=code: %d %s, want 400", code, out)
	}
}

// TestEmptyGoldWarns: a gold file with no items is taken (a reload may
// fill it), but the log warns that every event counts as unlabeled.
func TestEmptyGoldWarns(t *testing.T) {
	t.Parallel()
	gold := filepath.Join(t.TempDir(), "gold.jsonl")
	if err := os.WriteFile(gold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	h := startApp(t, appOptions{goldFile: gold, logs: logs})
	h.PublishJSON("rag.trace.live", goodTrace("A1"))
	h.waitEvents("live", map[string]int64{"unlabeled": 1})
	if want := `level=WARN msg="gold loaded with no items: every event counts as unlabeled`; !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, logs.String())
	}
}
