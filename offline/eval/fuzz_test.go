package eval

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/wire"
)

// FuzzEval runs whole evaluations of arbitrary trace files (and a baseline
// made of the same bytes reversed line by line) against the seed 001 gold
// set: an evaluation either fails with an error that names the trace file
// and a line, or gives a report that renders as valid JSON and as a table.
// The decoders are fuzzed on their own; this covers what eval adds around
// them (merging, de-duplication, chunk reuse, exact quantiles, rendering).
func FuzzEval(f *testing.F) {
	for _, data := range testenv.AddSeedFiles(f, filepath.Join(seedDir, "trace.jsonl"), filepath.Join(seedDir, "baseline.jsonl")) {
		lines := strings.Split(string(data), "\n")
		f.Add([]byte(lines[0] + "\n" + lines[0]))
	}
	f.Add([]byte(`{"qid":"Q-0137","delta_s":[0,1,0.5],"delta_s_cited":1}` + "\r\n\n" + `{"q_id":"Q-0160","ts":"2025-01-01T00:00:00+02:00"}`))
	f.Add([]byte(`{"qid":"Q-0152","topk":[{"id":"x","offsets":[1,0]}]}`))
	gold := filepath.Join(seedDir, "gold.jsonl")
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		trace := filepath.Join(dir, "trace.jsonl")
		base := filepath.Join(dir, "base.jsonl")
		lines := strings.Split(string(data), "\n")
		for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
			lines[i], lines[j] = lines[j], lines[i]
		}
		if err := os.WriteFile(trace, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(base, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := Run(Options{Gold: gold, Trace: trace, Baseline: base})
		if err != nil {
			var le *wire.LineError
			if !errors.As(err, &le) || (le.File != trace && le.File != base) || le.Line < 1 {
				t.Fatalf("error %q names no line of the input", err)
			}
			return
		}
		out, err := rep.JSON()
		if err != nil || !json.Valid(out) {
			t.Fatalf("report JSON: %v\n%s", err, out)
		}
		if len(rep.Table()) == 0 {
			t.Fatal("empty table")
		}
	})
}
