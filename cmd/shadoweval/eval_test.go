package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/wire/gen"
)

// gateFiles are the inputs of the CI gate test: a gold set, the live
// index's traces (baseline), a candidate equal to it, one whose
// recall@5 dropped by 5 points, and small versions of both.
type gateFiles struct {
	gold, baseline, same, worse, small string
}

// gateEvents is enough for the canary checks to pass between equal arms
// (each interval within its 0.02 tolerance at α = 0.01).
const gateEvents = 30000

func writeGateFiles(t *testing.T) gateFiles {
	t.Helper()
	dir := t.TempDir()
	// Offsets on every gold item with citations: citation_accuracy then
	// decides as soon as the others do.
	opt := gen.Options{Items: 2000, Seed: 3, Offsets: 1}
	f := gateFiles{
		gold: filepath.Join(dir, "gold.jsonl"), baseline: filepath.Join(dir, "live.jsonl"),
		same: filepath.Join(dir, "same.jsonl"), worse: filepath.Join(dir, "worse.jsonl"), small: filepath.Join(dir, "small.jsonl"),
	}
	var gold bytes.Buffer
	if err := gen.WriteGold(&gold, opt); err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	src := gen.NewTraceSource(opt)
	for range gateEvents {
		lines = append(lines, slices.Clone(src.Next()))
	}
	write := func(path string, lines [][]byte) {
		t.Helper()
		if err := os.WriteFile(path, append(bytes.Join(lines, []byte("\n")), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(f.gold, gold.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	write(f.baseline, lines)
	write(f.same, lines)
	write(f.worse, dropRecall(t, gold.Bytes(), lines, 18))
	write(f.small, lines[:60])
	return f
}

// dropRecall moves the gold ids of every n-th line out of its ranking
// (renamed, so the lists keep their lengths and ΔS its ranks): about
// recall_at_5 / n fewer recalled items, 5 points for n = 18.
func dropRecall(t *testing.T, gold []byte, lines [][]byte, n int) [][]byte {
	t.Helper()
	goldIDs := map[string]map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(gold))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var g struct {
			QID           string   `json:"qid"`
			GoldCitations []string `json:"gold_citations"`
			Relevant      []string `json:"relevant"`
		}
		if json.Unmarshal(sc.Bytes(), &g) != nil {
			continue // awkward rows the gate does not need
		}
		ids := map[string]bool{}
		for _, id := range append(g.GoldCitations, g.Relevant...) {
			ids[id] = true
		}
		goldIDs[g.QID] = ids
	}
	out := make([][]byte, len(lines))
	for i, l := range lines {
		out[i] = l
		if i%n != 0 {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatal(err)
		}
		qid, _ := ev["qid"].(string)
		move := func(id any) any {
			if s, ok := id.(string); ok && goldIDs[qid][s] {
				return "moved-" + s
			}
			return id
		}
		if ids, ok := ev["retrieved_ids"].([]any); ok {
			for j := range ids {
				ids[j] = move(ids[j])
			}
		}
		if items, ok := ev["topk"].([]any); ok {
			for _, it := range items {
				if m, ok := it.(map[string]any); ok {
					m["id"] = move(m["id"])
				}
			}
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

type evalJSON struct {
	Verdict  string              `json:"verdict"`
	Delta    map[string]*float64 `json:"delta"`
	Analysis struct {
		Checks []struct {
			Name     string `json:"name"`
			Verdict  string `json:"verdict"`
			Interval *[2]float64
		} `json:"checks"`
	} `json:"analysis"`
}

// TestEvalGate is the CI gate end to end: the command's exit code for a
// candidate equal to the baseline (0), one whose recall@5 dropped 5 points
// (1), files too small to decide (3) and a malformed line (2, naming file,
// line and field, with nothing on stdout).
func TestEvalGate(t *testing.T) {
	f := writeGateFiles(t)
	evalArgs := func(trace, baseline string, extra ...string) []string {
		return append([]string{"eval", "--gold", f.gold, "--trace", trace, "--baseline", baseline}, extra...)
	}
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	small, _ := os.ReadFile(f.small)
	badLines := bytes.SplitAfterN(small, []byte("\n"), 3)
	malformed := append(append(slices.Clone(badLines[0]), badLines[1]...), []byte(`{"qid":"A000001","topk":[{"id":"a","offsets":[9,1]}]}`+"\n")...)
	if err := os.WriteFile(bad, malformed, 0o644); err != nil {
		t.Fatal(err)
	}

	perQuestion := filepath.Join(t.TempDir(), "questions.jsonl")
	cases := []struct {
		name    string
		args    []string
		exit    int
		verdict string
		check   func(t *testing.T, rep evalJSON, stdout, stderr string)
	}{
		{name: "equal to the baseline", args: evalArgs(f.same, f.baseline), exit: exitOK, verdict: "pass",
			check: func(t *testing.T, rep evalJSON, _, _ string) {
				for name, d := range rep.Delta {
					if d != nil && *d != 0 {
						t.Errorf("delta %s = %v between equal files", name, *d)
					}
				}
			}},
		{name: "recall@5 dropped 5 points", args: evalArgs(f.worse, f.baseline), exit: exitFailed, verdict: "fail",
			check: func(t *testing.T, rep evalJSON, _, _ string) {
				if d := rep.Delta["recall_at_5"]; d == nil || *d > -0.04 || *d < -0.06 {
					t.Errorf("delta recall_at_5 = %v, want about -0.05", d)
				}
				for _, c := range rep.Analysis.Checks {
					if c.Name == "recall_at_5" && c.Verdict != "fail" {
						t.Errorf("recall_at_5 check %s, want fail", c.Verdict)
					}
				}
			}},
		{name: "table format", args: evalArgs(f.worse, f.baseline, "--format", "table"), exit: exitFailed,
			check: func(t *testing.T, _ evalJSON, stdout, _ string) {
				for _, want := range []string{"| recall_at_5 |", "**Canary analysis: fail**", "| metric | all | Δ |"} {
					if !strings.Contains(stdout, want) {
						t.Errorf("table lacks %q:\n%s", want, stdout)
					}
				}
			}},
		{name: "per question", args: evalArgs(f.worse, f.baseline, "--per-question", perQuestion, "--format", "table"), exit: exitFailed,
			check: func(t *testing.T, _ evalJSON, stdout, _ string) {
				if !strings.Contains(stdout, "Largest ranking regressions by question") {
					t.Errorf("table lacks the regressions:\n%s", stdout)
				}
				b, err := os.ReadFile(perQuestion)
				if err != nil {
					t.Fatal(err)
				}
				var first struct {
					Arm    string  `json:"arm"`
					Change float64 `json:"change"`
					Worst  string  `json:"worst"`
				}
				line, _, _ := bytes.Cut(b, []byte("\n"))
				if err := json.Unmarshal(line, &first); err != nil || first.Arm != "candidate" || !(first.Change < 0) || first.Worst == "" {
					t.Errorf("first line %s (%v): want the candidate's largest regression", line, err)
				}
			}},
		{name: "per question, unwritable", args: evalArgs(f.same, f.baseline, "--per-question", filepath.Join(t.TempDir(), "no", "such", "dir")), exit: exitBadInput,
			check: func(t *testing.T, _ evalJSON, stdout, stderr string) {
				if !strings.Contains(stderr, "--per-question") || stdout != "" {
					t.Errorf("stderr %q, stdout %d bytes", stderr, len(stdout))
				}
			}},
		{name: "too small to decide", args: evalArgs(f.small, f.small), exit: exitInconclusive, verdict: "inconclusive"},
		{name: "no baseline", args: []string{"eval", "--gold", f.gold, "--trace", f.small}, exit: exitOK},
		{name: "malformed line", args: evalArgs(bad, f.baseline), exit: exitBadInput,
			check: func(t *testing.T, _ evalJSON, stdout, stderr string) {
				if want := bad + ":3: field topk.0.offsets"; !strings.Contains(stderr, want) {
					t.Errorf("stderr %q does not say %q", stderr, want)
				}
				if stdout != "" {
					t.Errorf("stdout has %d bytes after bad input", len(stdout))
				}
			}},
		{name: "bad flag", args: evalArgs(f.small, f.small, "--format", "yaml"), exit: exitBadInput},
		{name: "missing --trace", args: []string{"eval", "--gold", f.gold}, exit: exitBadInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(c.args, &stdout, &stderr)
			if code != c.exit {
				t.Fatalf("exit %d, want %d\nstderr: %s\nstdout (head): %.2000s", code, c.exit, stderr.String(), stdout.String())
			}
			var rep evalJSON
			if c.verdict != "" {
				if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
					t.Fatalf("stdout is not the JSON report: %v", err)
				}
				if rep.Verdict != c.verdict {
					t.Errorf("verdict %q, want %q", rep.Verdict, c.verdict)
				}
			}
			if c.check != nil {
				c.check(t, rep, stdout.String(), stderr.String())
			}
			if t.Failed() {
				fmt.Fprintf(os.Stderr, "%s: checks %+v\n", c.name, rep.Analysis.Checks)
			}
		})
	}
}

// An eval that scored nothing says so on stderr: an empty gold file, or a
// trace whose qids are all outside the gold, would otherwise read as a
// clean report.
func TestEvalScoredNothing(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	gold := filepath.Join(dir, "gold.jsonl")
	trace := filepath.Join(dir, "trace.jsonl")
	for path, data := range map[string]string{
		empty: "",
		gold:  `{"qid":"A1","question":"q","answerable":true,"gold_claim_substr":["x"],"gold_citations":["p1#1"]}` + "\n",
		trace: `{"qid":"Z9","retrieved_ids":["p1#1"]}` + "\n",
	} {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for g, want := range map[string]string{
		empty: empty + " has no gold items: every event is unlabeled and nothing was scored",
		gold:  trace + ": none of its 1 events was scored (1 unlabeled: their qids are not in " + gold + ")",
	} {
		var out, errs bytes.Buffer
		runEval([]string{"--gold", g, "--trace", trace}, &out, &errs)
		if !strings.Contains(errs.String(), want) {
			t.Errorf("gold %s: stderr %q, want %q", g, errs.String(), want)
		}
	}
}
