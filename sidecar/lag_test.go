package sidecar

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/wire"
)

// shadoweval_event_lag_seconds observes now - ts for scored events that
// carry ts, and nothing for the others.
func TestEventLagHistogram(t *testing.T) {
	dir := t.TempDir()
	gold := testenv.WriteFile(t, dir, "gold.jsonl", []byte(`{"qid":"A1","answerable":true,"gold_citations":["p1"]}`+"\n"))
	cfg := config.Default()
	cfg.Gold.File = gold
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	reg := prometheus.NewRegistry()
	a, err := New(Options{Config: &cfg, Registry: reg, Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.gold.Reload(); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{
		`{"qid":"A1","ts":"2026-01-02T03:04:04.75Z","retrieved_ids":["p1"],"answer_json":{"claim":"x","citations":["p1"]}}`, // lag 0.25 s
		`{"qid":"A1","retrieved_ids":["p1"],"answer_json":{"claim":"x","citations":["p1"]}}`,                                // no ts: not observed
		`{"qid":"nope","ts":"2026-01-02T03:04:04Z"}`,                                                                        // unlabeled: not observed
		`{"qid":"A1","ts":"2026-01-02T03:04:05.5Z"}`,                                                                        // ahead of the clock: 0
	} {
		a.ingest.handle(&stream.Message{Kind: wire.KindTrace, Subject: "rag.trace.live", Data: []byte(data)})
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "shadoweval_event_lag_seconds" {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 2 || h.GetSampleSum() != 0.25 {
			t.Fatalf("lag histogram: %d samples, sum %v; want 2 and 0.25", h.GetSampleCount(), h.GetSampleSum())
		}
		return
	}
	t.Fatal("no shadoweval_event_lag_seconds")
}
