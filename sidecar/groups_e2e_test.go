package sidecar_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
)

// TestLambdaGroups: the runs of one qid in one arm form a λ group, complete
// with lambda.min_runs (3) runs; all → is convergent, any ← flips.
func TestLambdaGroups(t *testing.T) {
	t.Parallel()
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl", configure: func(c *config.Config) {
		c.Lambda.MinRuns = 3
	}})
	run := func(qid, state string, paraphrase int) {
		h.Publish("rag.trace.lam", []byte(fmt.Sprintf(
			`{"qid":%q,"paraphrase":%d,"seed":7,"retrieved_ids":["p3#1","p3#2","p3#3"],"lambda_state":%q,`+
				`"answer_json":{"claim":"Lambda one converges, two and three too.","citations":["p3#1"]}}`, qid, paraphrase, state)))
	}
	for i, s := range []string{"→", "→", "→"} {
		run("L1", s, i) // convergent
	}
	for i, s := range []string{"→", "←", "→"} {
		run("L2", s, i) // flips
	}
	for i, s := range []string{"→", "→"} {
		run("L3", s, i) // two runs: not a complete group
	}
	rep := h.waitEvents("lam", map[string]int64{"scored": 8})
	check := func(name string, want float64, wantSamples int64) {
		t.Helper()
		m := metric(t, rep, name)
		if m.Value == nil || *m.Value != want || m.Samples != wantSamples {
			t.Errorf("%s = %s, want %v (%d samples)", name, fmtValue(m), want, wantSamples)
		}
	}
	check("lambda_convergence", 1.0/2, 2)
	check("lambda_flip_rate", 1.0/2, 2)

	// A third run completes L3 (convergent).
	run("L3", "convergent", 2)
	rep = h.waitEvents("lam", map[string]int64{"scored": 9})
	check("lambda_convergence", 2.0/3, 3)
	check("lambda_flip_rate", 1.0/3, 3)

	// Another arm has groups of its own: two runs of L1 there are not a
	// complete group, whatever the lam arm holds.
	run2 := func(state string) {
		h.Publish("rag.trace.lam2", []byte(`{"qid":"L1","retrieved_ids":["p3#1"],"lambda_state":"`+state+
			`","answer_json":{"claim":"Lambda one converges.","citations":["p3#1"]}}`))
	}
	run2("→")
	run2("←")
	rep2 := h.waitEvents("lam2", map[string]int64{"scored": 2})
	for _, name := range []string{"lambda_convergence", "lambda_flip_rate"} {
		if m := metric(t, rep2, name); m.Value != nil || m.Samples != 0 {
			t.Errorf("arm lam2: %s = %s, want no value (no complete group)", name, fmtValue(m))
		}
	}
}

// judgement is one agent's verdict (SPEC §2.4).
type judgement struct {
	QID       string `json:"qid"`
	RequestID string `json:"request_id,omitempty"`
	Agent     string `json:"agent"`
	Label     string `json:"label"`
	Reason    string `json:"reason,omitempty"`
}

// seed003 is confusion_and_kappa of the seed 003 reference scorer.
func seed003(pairs [][2]string) (n int, pa, kappa, abstain float64) {
	labels := []string{"VALID", "NOT_IN_CONTEXT", "REJECT", "ABSTAIN"}
	idx := map[string]int{}
	for i, l := range labels {
		idx[l] = i
	}
	var m [4][4]int
	for _, p := range pairs {
		m[idx[p[0]]][idx[p[1]]]++
		n++
	}
	diag := 0
	var rs, cs [4]int
	for i := range m {
		diag += m[i][i]
		for j := range m {
			rs[i] += m[i][j]
			cs[j] += m[i][j]
		}
	}
	fn := float64(n)
	po := float64(diag) / fn
	pe := 0.0
	for i := range labels {
		// explicit conversions: Python rounds the product before adding
		pe += float64((float64(rs[i]) / fn) * (float64(cs[i]) / fn))
	}
	if 1-pe > 1e-12 {
		kappa = (po - pe) / (1 - pe)
	}
	return n, po, kappa, float64(rs[idx["ABSTAIN"]]) / fn
}

// TestJudgementPairs: Scholar and Auditor judgements of one request are
// paired, in either order, and give the agreement, kappa and abstain_rate
// of seed 003 over the pairs.
func TestJudgementPairs(t *testing.T) {
	t.Parallel()
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl"})
	pairs := [][2]string{ // scholar, auditor
		{"VALID", "VALID"}, {"VALID", "VALID"}, {"VALID", "VALID"}, {"VALID", "VALID"},
		{"VALID", "REJECT"}, {"NOT_IN_CONTEXT", "NOT_IN_CONTEXT"}, {"NOT_IN_CONTEXT", "VALID"},
		{"REJECT", "REJECT"}, {"ABSTAIN", "VALID"}, {"REJECT", "VALID"},
		{"VALID", "NOT_IN_CONTEXT"}, {"ABSTAIN", "ABSTAIN"},
	}
	qids := []string{"A1", "A2", "U1", "L1", "ZZ"} // ZZ: not in gold, paired all the same
	for i, p := range pairs {
		s := judgement{QID: qids[i%len(qids)], RequestID: fmt.Sprintf("req-%d", i), Agent: "scholar", Label: p[0]}
		a := judgement{QID: s.QID, RequestID: s.RequestID, Agent: "auditor", Label: p[1], Reason: "provenance ok"}
		if i == 3 {
			// no request_id: paired on qid
			s.RequestID, a.RequestID, s.QID, a.QID = "", "", "L3", "L3"
		}
		if i%2 == 1 {
			s, a = a, s // auditor first
		}
		h.PublishJSON("rag.judgement.jud", s)
		h.PublishJSON("rag.judgement.jud", a)
	}
	// Each judgement counts: two per pair.
	rep := h.waitEvents("jud", map[string]int64{"scored": int64(2 * len(pairs))})
	h.waitPending(0)

	n, pa, kappa, abstain := seed003(pairs)
	if kappa <= 0 || kappa >= 1 || abstain == 0 {
		t.Fatalf("fixture too tame: kappa %v, abstain rate %v", kappa, abstain)
	}
	for _, c := range []struct {
		name string
		want float64
	}{{"agreement", pa}, {"kappa", kappa}, {"abstain_rate", abstain}} {
		m := metric(t, rep, c.name)
		if m.Value == nil || *m.Value != c.want || m.Samples != int64(n) {
			t.Errorf("%s = %s, want %v (%d samples), as seed 003 computes it", c.name, fmtValue(m), c.want, n)
		}
	}

	// A judgement whose partner never comes times out and is not paired.
	h.PublishJSON("rag.judgement.jud", judgement{QID: "A1", RequestID: "alone", Agent: "scholar", Label: "VALID"})
	h.waitPending(1)
	h.Clock.Advance(time.Duration(config.Default().Join.TTL) + time.Second)
	h.Sidecar.ExpireNow()
	rep = h.waitEvents("jud", map[string]int64{"scored": int64(2 * len(pairs)), "join_timeout": 1})
	h.waitPending(0)
	checkSamples(t, rep, "agreement", int64(n), "after a lone judgement")
}
