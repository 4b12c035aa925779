package sidecar_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/offline"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/wire/gen"
)

// dataSet is one generated gold file and trace file.
type dataSet struct {
	gold, trace string
	items       int
}

// writeDataSet writes gold and traces with one clean trace per gold item
// (no awkward content), in gold order, most of them with ΔS and λ states.
func writeDataSet(t testing.TB, seed uint64, items int, rich float64) dataSet {
	t.Helper()
	dir := t.TempDir()
	ds := dataSet{gold: filepath.Join(dir, "gold.jsonl"), trace: filepath.Join(dir, "trace.jsonl"), items: items}
	opt := gen.Options{Seed: seed, Items: items, Awkward: -1, InOrder: true, Rich: rich}
	for path, write := range map[string]func(*bytes.Buffer) error{
		ds.gold:  func(b *bytes.Buffer) error { return gen.WriteGold(b, opt) },
		ds.trace: func(b *bytes.Buffer) error { return gen.WriteTraces(b, opt) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ds
}

// rawTrace is what the test reads of a trace line itself, with
// encoding/json, independently of the sidecar's decoder.
type rawTrace struct {
	QID          string   `json:"qid"`
	RetrievedIDs []string `json:"retrieved_ids"`
	TopK         []struct {
		ID string `json:"id"`
	} `json:"topk"`
	DeltaS      []float64 `json:"delta_s"`
	DeltaSCited *float64  `json:"delta_s_cited"`
	AnswerJSON  *struct {
		Claim     string          `json:"claim"`
		Citations json.RawMessage `json:"citations"`
	} `json:"answer_json"`
}

// readLines returns the non-blank lines of a JSONL file.
func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			lines = append(lines, bytes.Clone(line))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// expectedDeltaS computes, from the trace file alone, the ΔS cited of every
// shipped answer (SPEC §3: delta_s_cited, else the delta_s of the first
// citation at its rank in the ranked ids: topk's when sent, else
// retrieved_ids) and every top-k ΔS. It also checks that the data set is
// one the live and the offline scorers must agree on: one trace per gold
// qid and topk ids equal to retrieved_ids (offline reads retrieved_ids only).
func expectedDeltaS(t testing.TB, ds dataSet) (cited, retrieved []float64) {
	t.Helper()
	for i, line := range readLines(t, ds.gold) {
		var g map[string]json.RawMessage
		if err := json.Unmarshal(line, &g); err != nil {
			t.Fatalf("%s:%d: %v", ds.gold, i+1, err)
		}
		if _, ok := g["relevant"]; ok {
			t.Fatalf("%s:%d: the generator wrote a `relevant` alias: the live scorer reads it and the offline one does not, so they may legitimately differ", ds.gold, i+1)
		}
	}
	seen := map[string]bool{}
	lines := readLines(t, ds.trace)
	if len(lines) != ds.items {
		t.Fatalf("%s: %d traces for %d gold items, want exactly one each", ds.trace, len(lines), ds.items)
	}
	for i, line := range lines {
		var tr rawTrace
		if err := json.Unmarshal(line, &tr); err != nil {
			t.Fatalf("%s:%d: %v", ds.trace, i+1, err)
		}
		if seen[tr.QID] {
			t.Fatalf("%s:%d: second trace for qid %q", ds.trace, i+1, tr.QID)
		}
		seen[tr.QID] = true
		ids := tr.RetrievedIDs
		if tr.TopK != nil {
			ids = nil
			for _, it := range tr.TopK {
				ids = append(ids, it.ID)
			}
			if !slices.Equal(ids, tr.RetrievedIDs) {
				t.Fatalf("%s:%d: topk ids %v differ from retrieved_ids %v: the live scorer ranks by topk, the offline one by retrieved_ids", ds.trace, i+1, ids, tr.RetrievedIDs)
			}
		}
		retrieved = append(retrieved, tr.DeltaS...)
		// A trace without answer_json is a shipped empty claim without
		// citations, as in the reference.
		claim, rawCits := "", json.RawMessage(nil)
		if tr.AnswerJSON != nil {
			claim, rawCits = tr.AnswerJSON.Claim, tr.AnswerJSON.Citations
		}
		if strings.EqualFold(strings.TrimSpace(claim), "not in context") {
			continue // refused: no ΔS cited
		}
		var cits []string
		_ = json.Unmarshal(rawCits, &cits) // absent or not a list: no first citation
		switch {
		case tr.DeltaSCited != nil:
			cited = append(cited, *tr.DeltaSCited)
		case len(cits) > 0:
			if k := slices.Index(ids, cits[0]); k >= 0 && k < len(tr.DeltaS) {
				cited = append(cited, tr.DeltaS[k])
			}
		}
	}
	return cited, retrieved
}

// TestLiveMatchesOfflineScore replays generated trace files through NATS
// and checks that the live 5m window of arm live gives exactly the numbers
// of `shadoweval score` on the same files, and ΔS quantiles within the 1 %
// the sketch allows of the exact ones.
func TestLiveMatchesOfflineScore(t *testing.T) {
	t.Parallel()
	cases := []struct {
		seed     uint64
		items    int
		embedded bool
	}{
		{seed: 1, items: 500},
		{seed: 2, items: 1200, embedded: true},
		{seed: 3, items: 3000},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("seed%d_%d", tc.seed, tc.items), func(t *testing.T) {
			t.Parallel()
			ds := writeDataSet(t, tc.seed, tc.items, 0.8)
			wantCited, wantRetrieved := expectedDeltaS(t, ds)
			if len(wantCited) <= 100 || len(wantRetrieved) <= 100 {
				t.Fatalf("data set too thin for the quantiles: %d ΔS cited, %d ΔS retrieved", len(wantCited), len(wantRetrieved))
			}

			h := startApp(t, appOptions{embedded: tc.embedded, goldFile: ds.gold})
			st := h.replay(ds.trace, "rag.trace.live")
			if st.Sent != tc.items {
				t.Fatalf("replay sent %d messages, want %d", st.Sent, tc.items)
			}
			rep := h.waitEvents("live", map[string]int64{"scored": int64(tc.items)})
			t.Logf("%d events: precision %s, recall_at_5 %s, ΔS cited median %s (exact %v)", tc.items,
				fmtValue(rep.Metrics["precision"]), fmtValue(rep.Metrics["recall_at_5"]), fmtValue(rep.Metrics["delta_s_median"]), testenv.Percentile(wantCited, 0.5))
			checkEvents(t, rep, map[string]int64{"scored": int64(tc.items)})

			for _, k := range []int{1, 3, 5, 10} {
				off, err := offline.Score(offline.ScoreOptions{Gold: ds.gold, Trace: ds.trace, K: k, Gates: offline.DefaultScoreGates})
				if err != nil {
					t.Fatalf("offline score k=%d: %v", k, err)
				}
				if k == 1 {
					for _, c := range []struct {
						name    string
						want    float64
						samples int
					}{
						{"precision", off.Precision, off.Answered},
						{"chr", off.CHR, off.Answered},
						{"under_refusal", off.UnderRefusal, off.Unanswerable},
						{"over_refusal", off.OverRefusal, off.Answerable},
					} {
						if got := value(t, rep, c.name); got != c.want {
							t.Errorf("%s: live %v, offline %v", c.name, got, c.want)
						}
						if got := samples(t, rep, c.name); got != int64(c.samples) {
							t.Errorf("%s: live %d samples, offline %d", c.name, got, c.samples)
						}
					}
				}
				name := fmt.Sprintf("recall_at_%d", k)
				if got := value(t, rep, name); got != off.RecallAtK {
					t.Errorf("%s: live %v, offline %v", name, got, off.RecallAtK)
				}
				if got := samples(t, rep, name); got != int64(off.Answerable) {
					t.Errorf("%s: live %d samples, offline %d answerable", name, got, off.Answerable)
				}
			}

			for _, c := range []struct {
				name   string
				values []float64
				q      float64
			}{
				{"delta_s_median", wantCited, 0.5},
				{"delta_s_p90", wantCited, 0.9},
				{"delta_s_retrieved_median", wantRetrieved, 0.5},
				{"delta_s_retrieved_p90", wantRetrieved, 0.9},
			} {
				want := testenv.Percentile(c.values, c.q)
				got := value(t, rep, c.name)
				if math.Abs(got-want) > 0.01*want {
					t.Errorf("%s: live %v, exact %v: relative error %.4f > 1%%", c.name, got, want, math.Abs(got-want)/want)
				}
				if n := samples(t, rep, c.name); n != int64(len(c.values)) {
					t.Errorf("%s: %d samples, want %d", c.name, n, len(c.values))
				}
			}
		})
	}
}
