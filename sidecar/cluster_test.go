package sidecar

import (
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/window"
)

// TestClusterResultFreshness: the merged verdict passes only when every
// member's part is fresh; a stale or missing member turns pass into
// inconclusive and says why, and a fail stays a fail.
func TestClusterResultFreshness(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	cfg := config.Default()
	cfg.NATS.JetStream = true
	cfg.Cluster = config.ClusterConfig{Partitions: 2, Member: "0", PublishInterval: config.Duration(time.Second), StaleAfter: config.Duration(10 * time.Second), Gold: "all"}
	cfg.Analysis.Checks = map[string][]config.AnalysisCheck{
		"easy": {{Name: "precision", Metric: "precision", Tolerance: 0.99, MinSamples: 5}},
		"hard": {{Name: "precision", Metric: "precision", Op: ">=", Threshold: 0.99, MinSamples: 5}},
	}
	for _, set := range []string{config.CanaryCheckSet, config.EligibilityCheckSet} {
		cfg.Analysis.Checks[set] = config.DefaultCheckSets()[set]
	}
	a, err := New(Options{Config: &cfg, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	// Each member saw its own qids: precision 0.5 in both arms.
	part := func(set string, member int) analysis.Saved {
		m := analysis.NewManager(analysis.Options{Config: cfg.Analysis, Ks: cfg.K, MinRuns: cfg.Lambda.MinRuns})
		if _, _, err := m.Start(analysis.StartRequest{ID: "r", Checks: set}, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		for i := range 400 {
			o := window.Observation{Arm: []string{"canary", "live"}[i%2], QID: "q" + string(rune('a'+member)) + string(rune('a'+i%20)),
				HasAnswer: true, Answerable: true, Shipped: true, Contained: i%4 < 2, Hit: i%4 < 2}
			if err := m.Observe(&o, now.Add(-time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		x, _ := m.Get("r")
		s, err := x.Save(analysis.SaveClosedGroups)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		name, set  string
		ages       []time.Duration // of member 0's and 1's parts; <0: none
		want       analysis.Verdict
		reasonHas  string
		staleCount int
	}{
		{"fresh", "easy", []time.Duration{time.Second, 2 * time.Second}, analysis.Pass, "", 0},
		{"member 1 stale", "easy", []time.Duration{time.Second, 11 * time.Second}, analysis.Inconclusive, "member 1's part is 11 s old", 1},
		{"member 1 missing", "easy", []time.Duration{time.Second, -1}, analysis.Inconclusive, "member 1 has not written", 0},
		{"a fail stays a fail", "hard", []time.Duration{time.Second, 11 * time.Second}, analysis.Fail, "failing", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			a.analyses.m = analysis.NewManager(analysis.Options{Config: cfg.Analysis, Ks: cfg.K, MinRuns: cfg.Lambda.MinRuns})
			if _, _, err := a.analyses.m.Start(analysis.StartRequest{ID: "r", Checks: c.set}, now.Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
			a.cluster.parts = map[string]*memberPart{}
			for m, age := range c.ages {
				if age < 0 {
					continue
				}
				id := string(rune('0' + m))
				a.cluster.parts[id+".i"] = &memberPart{Member: id, Instance: "i", At: now.Add(-age), Applied: 10, Analyses: []analysis.Saved{part(c.set, m)}}
			}
			x, _ := a.analyses.m.Get("r")
			r := a.cluster.result(x)
			if r.Verdict != c.want || !strings.Contains(r.Reason, c.reasonHas) {
				t.Fatalf("verdict %s (%q), want %s with %q", r.Verdict, r.Reason, c.want, c.reasonHas)
			}
			if r.Events.Arm != int64(200*(len(c.ages)-strings.Count(c.name, "missing"))) {
				t.Errorf("merged events %+v", r.Events)
			}
			stale := 0
			for _, f := range r.Members {
				if f.Stale {
					stale++
				}
			}
			if len(r.Members) != 2 || stale != c.staleCount {
				t.Errorf("members %+v, want 2 with %d stale", r.Members, c.staleCount)
			}
		})
	}
}
