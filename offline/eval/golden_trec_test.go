package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The ranking metrics equal trec_eval's on the same data (testdata/trec,
// whose README gives the trec_eval version, commit and commands): per
// question, each the value `trec_eval -c -q` prints for the topic (short
// lists, an empty list and duplicates included), for every question whose
// gold set is not empty; and overall, the mean trec_eval prints over the
// topics that have a relevant document. Within 1e-12: Go's math.Log2 and
// glibc's differ by an ulp at some ranks.
func TestRankingMatchesTrecEval(t *testing.T) {
	dir := filepath.Join("testdata", "trec")
	rep, err := Run(Options{Gold: filepath.Join(dir, "gold.jsonl"), Trace: filepath.Join(dir, "trace.jsonl"), PerQuestion: true})
	if err != nil {
		t.Fatal(err)
	}
	perTopic := readTrecEval(t, filepath.Join(dir, "binary_c_q.txt"))
	means := readTrecEval(t, filepath.Join(dir, "binary_relevant_c_q.txt"))["all"]
	names := trecNames(rep.Ks)

	out, err := rep.PerQuestionJSONL()
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var l struct {
			QID     string             `json:"qid"`
			Arm     string             `json:"arm"`
			Runs    int                `json:"runs"`
			Metrics map[string]float64 `json:"metrics"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", sc.Bytes(), err)
		}
		if l.Arm != CandidateArm || l.Runs != 1 || lines[l.QID] != nil {
			t.Errorf("line %s: want one candidate line of one run per question", sc.Bytes())
		}
		lines[l.QID] = l.Metrics
	}
	checked := 0
	for topic, m := range perTopic {
		if topic == "all" {
			continue
		}
		got, ok := lines[topic]
		if m["num_rel"] == 0 {
			// G empty: out of the ranking metrics (trec_eval -c: 0).
			if ok {
				t.Errorf("%s has no relevant document, but a line: %v", topic, got)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: no line", topic)
			continue
		}
		for ours, theirs := range names {
			if d := math.Abs(got[ours] - m[theirs]); !(d <= 1e-12) {
				t.Errorf("%s: %s = %.17g, trec_eval %s %.17g", topic, ours, got[ours], theirs, m[theirs])
			}
		}
		checked++
	}
	if checked != int(means["num_q"]) || checked != len(lines) {
		t.Errorf("%d questions checked, %d lines, trec_eval's mean over %v", checked, len(lines), means["num_q"])
	}
	for _, edge := range []string{"q07", "q10", "q12", "q13", "q17", "q21"} { // empty, short, duplicates
		if lines[edge] == nil {
			t.Errorf("edge case %s not checked", edge)
		}
	}
	for ours, theirs := range names {
		m, ok := rep.Candidate.Overall.Metric(ours)
		if !ok || !m.Valid || m.Samples != int64(means["num_q"]) {
			t.Errorf("%s: %+v, want %v samples", ours, m, means["num_q"])
		}
		if d := math.Abs(m.Value - means[theirs]); !(d <= 1e-12) {
			t.Errorf("mean %s = %.17g, trec_eval %s %.17g", ours, m.Value, theirs, means[theirs])
		}
	}
}

// trecNames maps each ranking metric to the trec_eval measure it equals.
func trecNames(ks []int) map[string]string {
	m := map[string]string{"mrr": "recip_rank", "r_precision": "Rprec"}
	for _, k := range ks {
		s := strconv.Itoa(k)
		m["ndcg_at_"+s] = "ndcg_cut_" + s
		m["map_at_"+s] = "map_cut_" + s
		m["hit_at_"+s] = "success_" + s
	}
	return m
}

// readTrecEval reads trec_eval's output: measure, topic, value a line.
func readTrecEval(t *testing.T, path string) map[string]map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("%s:%d: %q", path, i+1, line)
		}
		v, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, i+1, err)
		}
		if out[f[1]] == nil {
			out[f[1]] = map[string]float64{}
		}
		out[f[1]][f[0]] = v
	}
	return out
}

// With a baseline, each question both files ranked has its candidate line
// (with candidate − baseline per metric and the largest drop) and then its
// baseline line, largest regression first; the table lists those that
// dropped.
func TestPerQuestionOrder(t *testing.T) {
	opt := seedOptions(true)
	opt.PerQuestion = true
	rep, err := Run(opt)
	if err != nil {
		t.Fatal(err)
	}
	ls := rep.PerQuestion
	if len(ls) < 4 {
		t.Fatalf("%d lines", len(ls))
	}
	prev := math.Inf(-1)
	for i := 0; i+1 < len(ls) && ls[i].Delta != nil; i += 2 {
		c, b := ls[i], ls[i+1]
		if c.Arm != CandidateArm || b.Arm != BaselineArm || c.QID != b.QID || b.Delta != nil {
			t.Fatalf("lines %d, %d: %+v, %+v", i, i+1, c, b)
		}
		low, worst := 0.0, ""
		for j, d := range c.Delta {
			if want := c.Metrics[j].Value - b.Metrics[j].Value; d.Value != want || d.Name != c.Metrics[j].Name {
				t.Errorf("%s: delta %s %v, want %v", c.QID, d.Name, d.Value, want)
			}
			if d.Value < low {
				low, worst = d.Value, d.Name
			}
		}
		if c.Change != low || c.Worst != worst || c.Change < prev {
			t.Errorf("%s: change %v on %q, want %v on %q, after %v", c.QID, c.Change, c.Worst, low, worst, prev)
		}
		prev = c.Change
	}
	if r := rep.Regressions(10); len(r) != 2 || r[0].QID != "Q-0160" || r[0].Change != -1 {
		t.Errorf("regressions %+v", r)
	}
}
