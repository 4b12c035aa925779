package eval_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/shadoweval/shadoweval/internal/cmdutil"
	"github.com/shadoweval/shadoweval/offline/eval"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/testenv/apptest"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire/gen"
)

// writeGen writes path with write, buffered.
func writeGen(t testing.TB, path string, write func(io.Writer) error) {
	t.Helper()
	if err := cmdutil.WriteFile(path, write); err != nil {
		t.Fatal(err)
	}
}

// TestParityWithSidecar sends a generated file through `eval` and through
// a running sidecar on real NATS: every metric, overall and per content
// type, and every event count must be the same; ΔS quantiles within the
// sketch's 1 % (exactly the same with --quantiles sketch).
func TestParityWithSidecar(t *testing.T) {
	dir := t.TempDir()
	goldPath := filepath.Join(dir, "gold.jsonl")
	tracePath := filepath.Join(dir, "trace.jsonl")
	const items, seed = 400, 11
	writeGen(t, goldPath, func(w io.Writer) error {
		return gen.WriteGold(w, gen.Options{Items: items, Seed: seed, Offsets: 0.5})
	})
	// Live-shaped events (λ groups of paraphrases, ΔS, top-k texts for
	// triage, event ids with redeliveries, orphan qids), then the seed 002
	// trace file of the same gold set with its awkward rows (blank lines,
	// CRLF, missing and null fields, Unicode).
	writeGen(t, tracePath, func(w io.Writer) error {
		src := gen.NewTraceSource(gen.Options{Items: items, Seed: seed, Offsets: 0.5})
		for range 3000 {
			if _, err := fmt.Fprintf(w, "%s\n", src.Next()); err != nil {
				return err
			}
		}
		return gen.WriteTraces(w, gen.Options{Items: items, Seed: seed})
	})

	app := apptest.Start(t, apptest.Options{GoldFile: goldPath})
	f, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), app.Timeout)
	defer cancel()
	sent, err := stream.Replay(ctx, app.NC, f, stream.ReplayOptions{Name: tracePath, Subject: "rag.trace.live"})
	if err != nil {
		t.Fatal(err)
	}
	const arm, win = "live", "1h"
	var live sidecar.WindowReport
	app.Poll("every event counted", func() string {
		rep, ok := app.Windows(arm, win)
		if !ok {
			return "no window yet"
		}
		live = rep
		n := int64(0)
		for _, k := range apptest.Outcomes {
			n += rep.Events[k]
		}
		if n != int64(sent.Sent) {
			return fmt.Sprintf("%d of %d counted: %v", n, sent.Sent, rep.Events)
		}
		return ""
	})

	exact, err := eval.Run(eval.Options{Gold: goldPath, Trace: tracePath})
	if err != nil {
		t.Fatal(err)
	}
	sketch, err := eval.Run(eval.Options{Gold: goldPath, Trace: tracePath, Quantiles: eval.QuantilesSketch})
	if err != nil {
		t.Fatal(err)
	}
	ev := exact.Candidate.Events
	for k, want := range map[string]int64{"scored": ev.Scored, "unlabeled": ev.Unlabeled, "duplicate": ev.Duplicate,
		"rejected": 0, "late": 0, "join_timeout": 0} {
		if live.Events[k] != want {
			t.Errorf("events.%s: sidecar %d, eval %d", k, live.Events[k], want)
		}
	}
	if ev.Lines != int64(sent.Sent) || ev.Duplicate == 0 || ev.Unlabeled == 0 {
		t.Errorf("eval events %+v of %d lines: want duplicates and unlabeled ones to compare", ev, sent.Sent)
	}
	if len(exact.Candidate.Types) < 4 {
		t.Errorf("types %d, want every content type", len(exact.Candidate.Types))
	}

	t.Logf("eval events %+v; sidecar %v; %d types", ev, live.Events, len(exact.Candidate.Types))
	sections := []*eval.Section{&exact.Candidate.Overall}
	for i := range exact.Candidate.Types {
		sections = append(sections, &exact.Candidate.Types[i])
	}
	for i, s := range sections {
		rep := live
		if s.Type != "" {
			app.GetJSON("/api/v1/windows?arm="+arm+"&window="+win+"&type="+url.QueryEscape(s.Type), 200, &rep)
		}
		sk := &sketch.Candidate.Overall
		if i > 0 {
			sk = &sketch.Candidate.Types[i-1]
		}
		if len(s.Metrics) != len(window.MetricNames(exact.Ks)) || len(rep.Metrics) != len(s.Metrics) {
			t.Fatalf("type %q: eval has %d metrics, the sidecar %d", s.Type, len(s.Metrics), len(rep.Metrics))
		}
		checked := 0
		for j, m := range s.Metrics {
			l, ok := rep.Metrics[m.Name]
			if !ok {
				t.Errorf("type %q: the sidecar has no %s", s.Type, m.Name)
				continue
			}
			where := fmt.Sprintf("type %q %s", s.Type, m.Name)
			if m.Samples != l.Samples || m.Valid != (l.Value != nil) {
				t.Errorf("%s: eval %+v, sidecar %v of %d samples", where, m, l.Value, l.Samples)
				continue
			}
			if !m.Valid {
				continue
			}
			checked++
			lv := *l.Value
			if window.KindOf(m.Name) == window.Quantile {
				if math.Abs(m.Value-lv) > 0.01*m.Value+1e-12 {
					t.Errorf("%s: exact %v, sidecar's sketch %v: more than 1 %% apart", where, m.Value, lv)
				}
			} else if m.Value != lv {
				t.Errorf("%s: eval %v, sidecar %v", where, m.Value, lv)
			}
			if sv := sk.Metrics[j]; sv.Value != lv || sv.Samples != l.Samples {
				t.Errorf("%s with --quantiles sketch: %v, sidecar %v", where, sv.Value, lv)
			}
		}
		t.Logf("type %q: %d metrics with a value compared", s.Type, checked)
		if s.Type == "" && checked < 25 {
			t.Errorf("only %d metrics had a value to compare", checked)
		}
	}
}
