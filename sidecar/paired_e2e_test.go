package sidecar_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/internal/sim/testbed"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/testenv"
)

// TestPairedAnalysesE2E drives the whole App over a real NATS server with
// the realistic testbed's traffic (internal/sim/testbed): questions of
// their own difficulty asked in visits of three runs, 30 % judged, with
// late, duplicated and split events, as the wire carries them. A canary
// with live's index passes, one whose index answers 10 points worse
// fails, each judged against live question by question; the verdict
// endpoint (read by the README's Argo Rollouts AnalysisTemplate) and the
// Flagger hooks answer as the README says for each verdict.
func TestPairedAnalysesE2E(t *testing.T) {
	t.Parallel()
	params := testbed.Default
	world := testbed.NewWorld(params, 7)
	live := world.NewIndex(1)
	worse := live.Worse(0.10, 2)
	var gold bytes.Buffer
	for i := range world.Questions {
		gold.Write(world.GoldLine(i))
		gold.WriteByte('\n')
	}
	goldFile := testenv.WriteFile(t, t.TempDir(), "gold.jsonl", gold.Bytes())
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const warmUp = 5 * time.Minute
	h := startApp(t, appOptions{
		goldFile:   goldFile,
		clockStart: t0.Add(-warmUp),
		configure: func(c *config.Config) {
			// One goroutine a subject: the events of a kind are applied
			// in the order they were sent.
			c.NATS.Workers = 1
		},
	})
	shape := testbed.DefaultShape
	traffic := testbed.NewTraffic(world, shape, []testbed.ArmTraffic{{Name: "live", Index: live, Rate: 16}}, 11, t0.Add(-warmUp))
	var sent int64
	// send publishes every message arriving before end in steps of 10 s,
	// the clock at each step's end, and waits until the app has handled
	// them all.
	send := func(end time.Time) {
		t.Helper()
		for step := h.Clock.Now().Add(10 * time.Second); !step.After(end); step = step.Add(10 * time.Second) {
			h.Clock.Set(step)
			traffic.Until(step, func(m *testbed.Message) {
				h.Publish(m.Subject, m.Data)
				sent++
			})
			testenv.Flush(t, h.NC)
			h.Poll(fmt.Sprintf("%d messages handled", sent), func() string {
				if n := handled(h); n != sent {
					return fmt.Sprintf("%d handled", n)
				}
				return ""
			})
			h.Sidecar.TickAnalysesNow()
		}
	}
	send(t0)
	// The healthy canary takes as much traffic as live, so that the test
	// need not wait the 40 minutes a canary at a fifth of it takes (the
	// README's figures).
	traffic.With(testbed.ArmTraffic{Name: "canary", Index: live, Rate: 16}, t0)
	traffic.With(testbed.ArmTraffic{Name: "worse", Index: worse, Rate: 4}, t0)
	// An analysis starts only for an arm an event (or the configuration)
	// has named: the first 10 s bring the worse arm's first events.
	send(t0.Add(10 * time.Second))
	for _, id := range []string{"healthy", "worse"} {
		arm := map[string]string{"healthy": "canary", "worse": "worse"}[id]
		if code, body := h.PostJSON("/api/v1/analyses", `{"id":"`+id+`","arm":"`+arm+`","baseline":"live"}`); code != 201 {
			t.Fatalf("POST /api/v1/analyses %s: %d %s", id, code, body)
		}
	}
	healthyBody := flaggerBody("search", "retriever", "c0ffee", map[string]string{"analysis": "healthy"})
	worseBody := flaggerBody("search", "retriever", "bad", map[string]string{"analysis": "worse", "arm": "worse"})

	var passedAt, failedAt time.Duration
	for at := time.Duration(0); at < 60*time.Minute && (passedAt == 0 || failedAt == 0); at += time.Minute {
		send(t0.Add(at + time.Minute))
		hr, wr := h.analysis("healthy"), h.analysis("worse")
		if hr.Verdict == analysis.Fail {
			t.Fatalf("the canary with live's index failed at %s: %s", at, hr.Reason)
		}
		if wr.Verdict == analysis.Pass {
			t.Fatalf("the 10 points worse canary passed at %s", at)
		}
		if hr.Verdict == analysis.Pass && passedAt == 0 {
			passedAt = at + time.Minute
			t.Logf("the healthy canary passed after %s (%d events a side)", passedAt, hr.Events.Arm)
			checkPaired(t, hr)
			h.checkFlaggerCanary("healthy canary passed", healthyBody, analysis.Pass)
			if v := h.verdict("/api/v1/verdict?arm=canary&analysis=healthy"); v.Verdict != analysis.Pass {
				t.Errorf("verdict endpoint: %s, want pass", v.Verdict)
			}
		}
		if wr.Verdict == analysis.Fail && failedAt == 0 {
			failedAt = at + time.Minute
			t.Logf("the worse canary failed after %s (%d events): %s", failedAt, wr.Events.Arm, wr.Reason)
			checkPaired(t, wr)
			h.checkFlaggerCanary("worse canary failed", worseBody, analysis.Fail)
			if v := h.verdict("/api/v1/verdict?arm=worse&analysis=worse"); v.Verdict != analysis.Fail {
				t.Errorf("verdict endpoint: %s, want fail", v.Verdict)
			}
		}
		if at == 5*time.Minute && passedAt == 0 {
			// Early on the healthy canary is undecided, and Flagger keeps
			// it advancing.
			h.checkFlaggerCanary("healthy canary undecided", healthyBody, analysis.Inconclusive)
		}
	}
	if passedAt == 0 {
		t.Errorf("the canary with live's index did not pass in 60 minutes: %s", h.analysis("healthy").Reason)
	}
	if failedAt == 0 || failedAt > 15*time.Minute {
		t.Errorf("the 10 points worse canary failed after %s, want within 15 minutes", failedAt)
	}
}

// checkFlaggerCanary checks the Flagger hooks that read the canary's
// analysis (rollout, confirm-promotion, rollback) for verdict v.
func (h *testApp) checkFlaggerCanary(what, body string, v analysis.Verdict) {
	h.T.Helper()
	for _, hook := range []string{"rollout", "confirm-promotion", "rollback"} {
		want := flaggerHooks[v][hook]
		if code, r := h.flagger(hook, body); code != want || r.Verdict != v {
			h.T.Errorf("%s: POST /api/v1/flagger/%s: %d with %s %s (%s), want %d and %s", what, hook, code, r.Analysis, r.Verdict, r.Reason, want, v)
		}
	}
}

// checkPaired fails unless r's per-event checks were judged on pairs.
func checkPaired(t *testing.T, r analysis.Result) {
	t.Helper()
	for _, c := range r.Checks {
		switch c.Metric {
		case "precision", "recall_at_5", "coverage", "over_refusal":
			if c.Pairing != analysis.PairedByQID || c.Pairs == 0 || c.PairedInterval == nil || c.UnpairedInterval == nil {
				t.Errorf("%s: %s: pairing %q, %d pairs, paired %v, unpaired %v", r.Analysis, c.Name, c.Pairing, c.Pairs, c.PairedInterval, c.UnpairedInterval)
			}
		}
	}
}

// handled is how many messages the app has handled: the count of its
// processing-time histogram over every kind.
func handled(h *testApp) int64 {
	var n int64
	fams := h.Scrape()
	for _, kind := range []string{"trace", "retrieval", "answer", "judgement"} {
		if c, ok := fams.Value("shadoweval_processing_seconds", map[string]string{"kind": kind}); ok {
			n += int64(c)
		}
	}
	return n
}
