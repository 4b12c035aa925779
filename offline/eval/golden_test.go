package eval

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/seed001")

// The seed 001 fixture (testdata/seed001) is built from the page's example
// rows: its gold row Q-0137 and its trace line verbatim (line 1 of
// trace.jsonl, no answer: a shipped empty claim), with paraphrase runs of
// that question and of three more, one per content type, for a candidate
// index (trace.jsonl, with an unlabeled qid and a repeated event_id) and
// the live one (baseline.jsonl).
const seedDir = "testdata/seed001"

func seedOptions(baseline bool) Options {
	opt := Options{Gold: seedDir + "/gold.jsonl", Trace: seedDir + "/trace.jsonl"}
	if baseline {
		opt.Baseline = seedDir + "/baseline.jsonl"
	}
	return opt
}

func TestGoldenSeed001(t *testing.T) {
	cases := []struct {
		want        string
		baseline    bool
		table       bool
		perQuestion bool
	}{
		{"want.json", false, false, false},
		{"want.md", false, true, false},
		{"want-baseline.json", true, false, false},
		{"want-baseline.md", true, true, false},
		{"want-per-question.jsonl", false, false, true},
		{"want-baseline-per-question.jsonl", true, false, true},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			opt := seedOptions(c.baseline)
			opt.PerQuestion = c.perQuestion
			rep, err := Run(opt)
			if err != nil {
				t.Fatal(err)
			}
			got := rep.Table()
			switch {
			case c.perQuestion:
				got, err = rep.PerQuestionJSONL()
			case !c.table:
				got, err = rep.JSON()
			}
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(seedDir, c.want)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs (go test -run Golden -update rewrites it):\n%s", path, got)
			}
		})
	}
}

// TestSeed001ByHand checks the golden numbers that matter against values
// worked out by hand from the fixture with the definitions of seed 001 and
// SPEC §3–4, so the golden files are not only what the code printed once.
func TestSeed001ByHand(t *testing.T) {
	rep, err := Run(seedOptions(true))
	if err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	cases := []struct {
		file, typ, metric string
		want              float64 // NaN: no value
		samples           int64
	}{
		// Eligible runs: the three of Q-0137, Q-0152 and the two of
		// Q-0160; covered: Q-0137 #2 and #3 (gold ids), Q-0152 #1 and #3,
		// Q-0160 #1 (an item of S.9.3.1, under the anchor S.9.3).
		{"candidate", "", "coverage", 5.0 / 8, 8},
		// Gold with offsets: Q-0137 and Q-0152. Accurate: Q-0137 #2 (4 and
		// 9 bytes off) and Q-0152 #1; Q-0152 #3 is 60 bytes off, Q-0137
		// #3's id has no gold offsets, the seed's own line cites nothing.
		{"candidate", "", "citation_accuracy", 2.0 / 6, 6},
		{"candidate", "code", "citation_accuracy", 1.0 / 3, 3},
		// P@5 of the seed's line: 1 gold id of 2 ranked.
		{"candidate", "figure", "mean_recall_at_5", nan, 0},
		{"candidate", "table", "recall_at_5", 0, 2},
		// Cited ΔS of shipped runs: 0.28 0.35 | 0.22 0.66 0.25 | 0.44 |
		// 0.69 — sorted 0.22 0.25 0.28 0.35 0.44 0.66 0.69: median 0.35,
		// p90 at rank 5.4: 0.66 + 0.4·(0.69 − 0.66).
		{"candidate", "", "delta_s_median", 0.35, 7},
		{"candidate", "", "delta_s_p90", 0.66 + 0.4*(0.69-0.66), 7},
		// λ groups of three runs: Q-0137 all → (the seed's line too):
		// convergent; Q-0152 has a ←: flips; Q-0160 and Q-0199 have two.
		{"candidate", "", "lambda_convergence", 0.5, 2},
		{"candidate", "", "lambda_flip_rate", 0.5, 2},
		{"candidate", "figure", "under_refusal", 0.5, 2},
		{"baseline", "", "coverage", 7.0 / 8, 8},
		{"baseline", "table", "recall_at_5", 1, 2},
	}
	for _, c := range cases {
		f := &rep.Candidate
		if c.file == "baseline" {
			f = rep.Baseline
		}
		s := &f.Overall
		if c.typ != "" {
			var ok bool
			if s, ok = f.TypeSection(c.typ); !ok {
				t.Fatalf("%s: no type %s", c.file, c.typ)
			}
		}
		m, _ := s.Metric(c.metric)
		switch {
		case math.IsNaN(c.want) && m.Valid:
			t.Errorf("%s %s %s = %v, want no value", c.file, c.typ, c.metric, m.Value)
		case !math.IsNaN(c.want) && (!m.Valid || math.Abs(m.Value-c.want) > 1e-12 || m.Samples != c.samples):
			t.Errorf("%s %s %s = %v (valid %v, %d samples), want %v (%d)", c.file, c.typ, c.metric, m.Value, m.Valid, m.Samples, c.want, c.samples)
		}
	}
	// Q-0152 cites a negative at ΔS 0.66 once; Q-0199 ships an answer
	// citing ΔS 0.69.
	if got, want := rep.Candidate.Overall.BadQIDs, []string{"Q-0152", "Q-0199"}; !slices.Equal(got, want) {
		t.Errorf("bad_qids %v, want %v", got, want)
	}
	if got, want := rep.Candidate.Events, (Events{Lines: 12, Scored: 10, Unlabeled: 1, Duplicate: 1, WithTS: 12}); got != want {
		t.Errorf("events %+v, want %+v", got, want)
	}
	if rep.Verdict() != "inconclusive" {
		t.Errorf("verdict %s, want inconclusive: ten events decide nothing", rep.Verdict())
	}
}
