package rollouts

// The sidecar under test runs in process, started by testenv/apptest as
// the sidecar's own end-to-end tests start it: sidecar.New/Start/Stop on
// 127.0.0.1:0, a real nats-server started in process (testenv, port -1),
// a gold file and traffic from wire/gen. Time moves only through the fake clock given as Options.Now,
// and every event carries ts = that clock, so a test publishes as fast as
// NATS takes it and an analysis (which accumulates by event time ≥ its
// start) sees exactly the traffic published after it started. Nothing
// sleeps: helpers poll the HTTP API on a condition under one generous
// deadline.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/testenv/apptest"
	"github.com/shadoweval/shadoweval/wire/gen"
)

// waitTimeout bounds every wait for the sidecar: long enough for a loaded
// 2-core machine, reached only when something is broken.
const waitTimeout = 120 * time.Second

// Traffic: one gold set, one generator; arms differ only by quality, the
// probability that a λ group of runs answers right (a claim holding a gold
// substring, a gold citation retrieved in the top 5, a refusal for an
// unanswerable item). A degraded arm ships claims that miss the gold
// substrings and cites wrong ids.
const (
	trafficSeed  = 20310304
	trafficItems = 400
	// qualityLive is the live arm's quality; a healthy candidate has the
	// same, a degraded one qualityDegraded (precision 10+ points lower:
	// checked on the windows API by checkDegraded).
	qualityLive     = 0.9
	qualityDegraded = 0.75
	// qualityShadowGood is a shadow arm fit for the eligibility checks.
	qualityShadowGood = 1.0
)

// sidecarUnderTest is one running sidecar, a NATS client next to it and a
// traffic source.
type sidecarUnderTest struct {
	*apptest.App
	traffic *apptest.Traffic

	mu sync.Mutex
	// goldOffsets are the gold relevant_offsets by qid and id; exact holds
	// the arms whose events report their first citation's gold offsets.
	goldOffsets map[string]map[string][2]int64
	exact       map[string]bool
}

// startSidecar starts a NATS server and the sidecar on it with the
// generated gold set; both stop when the test ends. configure, when set,
// edits the configuration before New.
func startSidecar(t testing.TB, configure func(*config.Config)) *sidecarUnderTest {
	t.Helper()
	var gold bytes.Buffer
	if err := gen.WriteGold(&gold, genOptions(nil)); err != nil {
		t.Fatal(err)
	}
	s := &sidecarUnderTest{
		App: apptest.Start(t, apptest.Options{
			GoldData: gold.Bytes(), Configure: configure, Timeout: waitTimeout, LogTail: 8 << 10,
		}),
		goldOffsets: map[string]map[string][2]int64{},
		exact:       map[string]bool{},
	}
	for line := range bytes.Lines(gold.Bytes()) {
		var g struct {
			QID     string              `json:"qid"`
			Offsets map[string][2]int64 `json:"relevant_offsets"`
		}
		if err := json.Unmarshal(line, &g); err != nil {
			t.Fatalf("generated gold: %v in %s", err, line)
		}
		s.goldOffsets[g.QID] = g.Offsets
	}
	s.traffic = s.Traffic(genOptions(s.Clock.Now))
	s.traffic.Edit(func(arm string, event []byte) []byte {
		s.mu.Lock()
		exact := s.exact[arm]
		s.mu.Unlock()
		if exact {
			return s.withExactOffsets(event)
		}
		return event
	})
	return s
}

func genOptions(now func() time.Time) gen.Options {
	// Awkward -1: no awkward content (orphans, redeliveries, malformed
	// corners), so every event is scored and the arms differ by quality
	// alone.
	return gen.Options{Seed: trafficSeed, Items: trafficItems, Awkward: -1, Arms: []string{"live"}, Quality: qualityLive, Now: now}
}

// exactOffsets makes arm's future events report the gold offsets of their
// first citation (answer_json.citation_offsets), as a pipeline that cuts
// its snippets exactly would: the generator jitters offsets and often
// leaves them out, which no arm survives the eligibility floor
// citation_accuracy >= 0.95 with. Used for the shadow arm of the
// eligibility tests.
func (s *sidecarUnderTest) exactOffsets(arm string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exact[arm] = true
}

func (s *sidecarUnderTest) withExactOffsets(event []byte) []byte {
	s.T.Helper()
	var ev map[string]any
	if err := json.Unmarshal(event, &ev); err != nil {
		s.T.Fatalf("generated event: %v", err)
	}
	ans, _ := ev["answer_json"].(map[string]any)
	qid, _ := ev["qid"].(string)
	if ans == nil {
		return event
	}
	cites, _ := ans["citations"].([]any)
	if len(cites) == 0 {
		return event
	}
	// The first citation that has gold offsets goes first.
	for i, c := range cites {
		id, _ := c.(string)
		off, ok := s.goldOffsets[qid][id]
		if !ok {
			continue
		}
		cites[0], cites[i] = cites[i], cites[0]
		ans["citation_offsets"] = map[string]any{id: []int64{off[0], off[1]}}
		break
	}
	out, err := json.Marshal(ev)
	if err != nil {
		s.T.Fatal(err)
	}
	return out
}

// tick is one analysis interval: the clock moves by d and n events of
// each arm follow, stamped with the new time; it returns once the sidecar
// has applied them all.
func (s *sidecarUnderTest) tick(d time.Duration, n int, arms ...string) {
	s.T.Helper()
	s.Clock.Advance(d)
	s.traffic.Send(n, arms...)
	s.waitApplied(arms...)
}

// waitApplied waits until the 1h window of each arm counts every event
// published to it (whatever its outcome). An event is counted after it is
// applied.
func (s *sidecarUnderTest) waitApplied(arms ...string) {
	s.T.Helper()
	for _, arm := range arms {
		want := s.traffic.Sent(arm)
		s.Poll(fmt.Sprintf("%d events applied to arm %q", want, arm), func() string {
			rep, ok := s.windows(arm)
			if !ok {
				return "no window report for the arm yet"
			}
			var got int64
			for _, k := range apptest.Outcomes {
				got += rep.Events[k]
			}
			if got != want {
				return fmt.Sprintf("events are %v", rep.Events)
			}
			return ""
		})
	}
}

// windows reads the 1h window of arm; ok is false on 404 (no data yet).
func (s *sidecarUnderTest) windows(arm string) (sidecar.WindowReport, bool) {
	s.T.Helper()
	return s.Windows(arm, "1h")
}

// windowValue is a metric of arm's 1h window; it fails when it has none.
func (s *sidecarUnderTest) windowValue(arm, metric string) float64 {
	s.T.Helper()
	rep, ok := s.windows(arm)
	if !ok {
		s.T.Fatalf("no window report for arm %q", arm)
	}
	m, ok := rep.Metrics[metric]
	if !ok || m.Value == nil {
		s.T.Fatalf("arm %q: metric %q has no value (%+v)", arm, metric, m)
	}
	return *m.Value
}

// checkDegraded asserts the premise of a degraded-canary test: the
// candidate's precision is at least 10 points below the baseline's, over
// the traffic published so far and 5000 more events of each arm (so the
// premise does not hang on a small sample).
func (s *sidecarUnderTest) checkDegraded(arm, baseline string) {
	s.T.Helper()
	s.tick(time.Second, 5000, arm, baseline)
	pa, pb := s.windowValue(arm, "precision"), s.windowValue(baseline, "precision")
	if pb-pa < 0.10 {
		s.T.Fatalf("test premise: precision of %s is %.3f, of %s %.3f: want the candidate 10+ points worse", arm, pa, baseline, pb)
	}
	s.T.Logf("precision: %s %.3f, %s %.3f", arm, pa, baseline, pb)
}

// verdictResponse is the body of GET /api/v1/verdict (SPEC §6); fields
// outside the contract are ignored.
type verdictResponse struct {
	Verdict  string        `json:"verdict"`
	Analysis string        `json:"analysis"`
	Arm      string        `json:"arm"`
	Baseline string        `json:"baseline"`
	Since    time.Time     `json:"since"`
	Checks   []checkResult `json:"checks"`
}

type checkResult struct {
	Name      string    `json:"name"`
	Metric    string    `json:"metric"`
	Estimate  *float64  `json:"estimate"`
	Interval  []float64 `json:"interval"`
	Tolerance *float64  `json:"tolerance"`
	Samples   struct {
		Arm      int64 `json:"arm"`
		Baseline int64 `json:"baseline"`
	} `json:"samples"`
	Verdict string `json:"verdict"`
}

// Verdicts of the contract.
const (
	verdictPass         = "pass"
	verdictFail         = "fail"
	verdictInconclusive = "inconclusive"
)

// verdict is GET /api/v1/verdict for analysis id (starting it when
// unknown); it fails the test unless the answer is 200 with one of the
// three verdicts and names the analysis, arm and baseline asked for.
func (s *sidecarUnderTest) verdict(id, arm, baseline string) verdictResponse {
	s.T.Helper()
	q := url.Values{"arm": {arm}, "analysis": {id}}
	if baseline != "" {
		q.Set("baseline", baseline)
	}
	path := "/api/v1/verdict?" + q.Encode()
	code, body := s.Get(path)
	if code != http.StatusOK {
		s.T.Fatalf("GET %s: status %d, want 200 (SPEC §6: always 200): %s", path, code, body)
	}
	var v verdictResponse
	if err := json.Unmarshal(body, &v); err != nil {
		s.T.Fatalf("GET %s: %v in %s", path, err, body)
	}
	if baseline == "" {
		baseline = "live"
	}
	if v.Analysis != id || v.Arm != arm || v.Baseline != baseline {
		s.T.Fatalf("GET %s answered analysis %q arm %q baseline %q", path, v.Analysis, v.Arm, v.Baseline)
	}
	switch v.Verdict {
	case verdictPass, verdictFail, verdictInconclusive:
	default:
		s.T.Fatalf("GET %s: verdict %q is none of pass, fail, inconclusive: %s", path, v.Verdict, body)
	}
	return v
}

// summary is one line about a verdict, for logs and failure messages.
func (v verdictResponse) summary() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s", v.Verdict)
	for _, c := range v.Checks {
		if c.Verdict == verdictPass {
			continue
		}
		fmt.Fprintf(&b, " %s=%s", c.Name, c.Verdict)
		if c.Estimate != nil {
			fmt.Fprintf(&b, "(%.3f", *c.Estimate)
			if len(c.Interval) == 2 {
				fmt.Fprintf(&b, " [%.3f,%.3f]", c.Interval[0], c.Interval[1])
			}
			fmt.Fprintf(&b, " n=%d/%d)", c.Samples.Arm, c.Samples.Baseline)
		}
	}
	return b.String()
}
