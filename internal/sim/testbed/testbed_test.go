package testbed

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// The model is what the README says it is: these are the properties the
// canary tables rest on.

func TestSeedsReproduceWorldsAndIndexes(t *testing.T) {
	a, b := NewWorld(Default, 1), NewWorld(Default, 1)
	if !slices.EqualFunc(a.Questions, b.Questions, func(x, y Question) bool {
		return x.QID == y.QID && x.Type == y.Type && x.Answerable == y.Answerable && slices.Equal(x.Gold, y.Gold) && x.Phrase == y.Phrase
	}) {
		t.Fatal("two worlds of seed 1 differ")
	}
	if !slices.Equal(a.NewIndex(7).Answers, b.NewIndex(7).Answers) {
		t.Fatal("two indexes of seed 7 differ")
	}
	if slices.Equal(a.NewIndex(7).Answers, a.NewIndex(8).Answers) {
		t.Fatal("indexes of seeds 7 and 8 are the same")
	}
}

// Most questions are almost always right or almost always wrong, the
// overall chance of a right answer where retrieval finds the gold chunk
// about 0.9, and a fifth of the questions unanswerable.
func TestQuestionsDifferInDifficulty(t *testing.T) {
	w := NewWorld(Default, 1)
	ix := w.NewIndex(1)
	var answerable, retrieved, polar int
	var right float64
	for i, a := range ix.Answers {
		if !w.Questions[i].Answerable {
			continue
		}
		answerable++
		if !a.RetrievalOK {
			continue
		}
		retrieved++
		right += a.Right
		if a.Right >= 0.95 || a.Right <= 0.05 {
			polar++
		}
	}
	if u := 1 - float64(answerable)/float64(len(w.Questions)); math.Abs(u-Default.Unanswerable) > 0.02 {
		t.Errorf("unanswerable share %.3f, want %.2f ± 0.02", u, Default.Unanswerable)
	}
	if m := right / float64(retrieved); m < 0.86 || m > 0.94 {
		t.Errorf("mean chance of a right answer where retrieved %.3f, want 0.86–0.94", m)
	}
	if s := float64(polar) / float64(retrieved); s < 0.8 || s > 0.92 {
		t.Errorf("questions right or wrong ≥ 95 %% of the time: %.3f, want 0.80–0.92", s)
	}
}

func TestScenarioIndexes(t *testing.T) {
	w := NewWorld(Default, 1)
	live := w.NewIndex(1)
	base := live.Expected()
	for _, points := range []float64{0.01, 0.03, 0.05, 0.10} {
		got := live.Worse(points, 2).Expected()
		drop := base.Precision - got.Precision
		// Worse stops at the first question that reaches the target: one
		// question moves precision by about 1/2,400.
		if drop < points || drop > points+0.002 {
			t.Errorf("Worse(%.2f): precision drops %.4f", points, drop)
		}
		if got.Recall5 >= base.Recall5 {
			t.Errorf("Worse(%.2f): recall_at_5 %.4f, not below %.4f", points, got.Recall5, base.Recall5)
		}
	}
	redrawn := live.Redraw(0.1, 2)
	changed := 0
	for i := range redrawn.Answers {
		if redrawn.Answers[i] != live.Answers[i] {
			changed++
		}
	}
	if s := float64(changed) / float64(len(live.Answers)); s < 0.08 || s > 0.12 {
		t.Errorf("Redraw(0.1) changed %.3f of the questions", s)
	}
	if d := redrawn.Expected().Precision - base.Precision; math.Abs(d) > 0.01 {
		t.Errorf("Redraw(0.1) moved precision by %.4f: not an index of the same quality", d)
	}
	gold := func(ix *Index) (med, p90 float64) {
		v := make([]float64, len(ix.Answers))
		for i, a := range ix.Answers {
			v[i] = a.GoldDeltaS
		}
		slices.Sort(v)
		return v[len(v)/2], v[len(v)*9/10]
	}
	m0, p0 := gold(live)
	m1, p1 := gold(live.StretchDeltaS(0.05))
	if m1 != m0 || math.Abs(p1-p0-0.05) > 0.005 {
		t.Errorf("StretchDeltaS(0.05): median %.4f → %.4f, p90 %.4f → %.4f", m0, m1, p0, p1)
	}
}

// Traffic: the same seed sends the same messages; visits come as runs of
// one question; a shadow answers every live request with its request_id;
// duplicates, splits and late arrivals come at about their rates.
func TestTraffic(t *testing.T) {
	w := NewWorld(Default, 1)
	live, canary := w.NewIndex(1), w.NewIndex(2)
	arms := []ArmTraffic{
		{Name: "live", Index: live, Rate: 16},
		{Name: "shadow", Index: canary, Mirror: "live", MirrorLag: time.Second},
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type seen struct {
		hash                     uint64
		msgs, traces, judgements int
		halves, dupes, late      int
		requests                 map[string][2]bool
		outOfOrder               bool
	}
	gen := func() seen {
		s := seen{requests: map[string][2]bool{}}
		h := fnv.New64a()
		ids := map[string]bool{}
		var last time.Time
		NewTraffic(w, DefaultShape, arms, 3, t0).Until(t0.Add(10*time.Minute), func(m *Message) {
			h.Write([]byte(m.Subject))
			h.Write(m.Data)
			s.msgs++
			if m.Arrive.Before(last) {
				s.outOfOrder = true
			}
			last = m.Arrive
			if strings.Contains(m.Subject, "judg") {
				s.judgements++
				return
			}
			var e struct {
				EventID   string `json:"event_id"`
				RequestID string `json:"request_id"`
				TS        time.Time
			}
			if err := json.NewDecoder(bytes.NewReader(m.Data)).Decode(&e); err != nil {
				t.Fatalf("%s: %v: %s", m.Subject, err, m.Data)
			}
			s.traces++
			// A split run's halves share their event_id on two subjects.
			if key := m.Subject + " " + e.EventID; ids[key] {
				s.dupes++
			} else {
				ids[key] = true
			}
			if !strings.HasPrefix(m.Subject, "rag.trace.") {
				s.halves++
			}
			if m.Arrive.Sub(e.TS) >= 20*time.Second {
				s.late++
			}
			r := s.requests[e.RequestID]
			r[boolIndex(strings.HasSuffix(m.Subject, ".shadow"))] = true
			s.requests[e.RequestID] = r
		})
		s.hash = h.Sum64()
		return s
	}
	a, b := gen(), gen()
	if a.hash != b.hash || a.msgs != b.msgs {
		t.Fatalf("seed 3 sent %d then %d messages, hashes %x and %x", a.msgs, b.msgs, a.hash, b.hash)
	}
	if a.outOfOrder {
		t.Error("messages not in arrival order")
	}
	if a.judgements == 0 {
		t.Error("no judgement events")
	}
	both := 0
	for _, r := range a.requests {
		if r[0] && r[1] {
			both++
		}
	}
	// The last second's live requests may not have their shadow yet.
	if f := float64(both) / float64(len(a.requests)); f < 0.99 {
		t.Errorf("requests answered by live and shadow: %.3f", f)
	}
	rate := func(n int) float64 { return float64(n) / float64(a.traces) }
	if r := rate(a.dupes); r < 0.002 || r > 0.01 {
		t.Errorf("duplicates %.4f of trace messages, want about %.3f", r, DefaultAwkward.Duplicate)
	}
	if r := rate(a.halves); r < 0.12 || r > 0.25 {
		t.Errorf("halves %.4f of trace messages, want about 2 × %.2f / 1.1", r, DefaultAwkward.Split)
	}
	if r := rate(a.late); r < 0.004 || r > 0.02 {
		t.Errorf("late by 20 s or more: %.4f of trace messages, want about %.2f", r, DefaultAwkward.Late)
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}
