package sidecar

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/wire"
)

// FuzzHandle feeds any bytes, on any input subject, to the handler of a
// sidecar that is not connected (its dead letters go nowhere): it never
// panics, and a trace message always ends with exactly one outcome
// (scored, unlabeled, rejected, duplicate or late).
func FuzzHandle(f *testing.F) {
	for _, s := range []string{
		`{"qid":"A1","retrieved_ids":["p1#1"],"answer_json":{"claim":"Alpha rejects null keys.","citations":["p1#1"]}}`,
		`{"qid":"A1","event_id":"e1","ts":"2031-03-04T05:06:00Z","topk":[{"id":"p1#1","section_id":"S.1"}],"delta_s":[0.2]}`,
		`{"qid":"U1","request_id":"r","answer_json":{"claim":"not in context"}}`,
		`{"qid":"A1","request_id":"r","agent":"scholar","label":"VALID"}`,
		`{"qid":"A1","x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		`{"qid":"A1","delta_s":[1e999]}`,
		"{\"qid\":\"A\xff\"}",
		`{"qid":"A1","ts":"2099-01-01T00:00:00Z"}`,
	} {
		for k := range wire.NumKinds {
			f.Add(uint8(k), "h", []byte(s))
		}
	}
	dir := f.TempDir()
	gold := filepath.Join(dir, "gold.jsonl")
	data, err := os.ReadFile("testdata/gold_v1.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(gold, data, 0o644); err != nil {
		f.Fatal(err)
	}
	cfg := config.Default()
	cfg.Gold.File = gold
	cfg.Limits.MaxMessageBytes = 64 << 10
	now := time.Date(2031, 3, 4, 5, 6, 0, 0, time.UTC)
	a, err := New(Options{Config: &cfg, Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	if err := a.gold.Reload(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, kind uint8, arm string, data []byte) {
		k := wire.Kind(kind % wire.NumKinds)
		m := &stream.Message{Kind: k, Subject: "rag." + k.String() + "." + arm, Data: data}
		total := sumOutcomes(a, now)
		a.ingest.handle(m)
		if k != wire.KindTrace {
			return
		}
		if got := sumOutcomes(a, now); got != total+1 {
			t.Fatalf("a trace message made %d outcomes, want 1", got-total)
		}
	})
}

// sumOutcomes is every outcome counted over the 1h windows of every arm.
func sumOutcomes(a *App, now time.Time) int64 {
	arms := []string{vocab.Other}
	for arm := range *a.ingest.arms.seen.Load() {
		arms = append(arms, arm)
	}
	var n int64
	for _, arm := range arms {
		for _, c := range a.outcomes.Counts(arm, "1h", now) {
			n += c
		}
	}
	return n
}
