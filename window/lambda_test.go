package window_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// run is one λ run as both the checks and the windows see it.
type run struct {
	qid      string
	typ      string
	at       time.Time
	answered bool // HasAnswer; otherwise a retrieval-only half with a state
	state    vocab.LambdaState
	refused  bool
	cited    []string
}

func (r run) observation() *window.Observation {
	return &window.Observation{
		QID: r.qid, Type: r.typ, Time: r.at,
		HasAnswer: r.answered, Answerable: true, Shipped: !r.refused,
		Lambda: window.LambdaRun{State: r.state, Refused: r.refused, Cited: window.CitedSetHash(r.cited)},
		Triage: -1,
	}
}

func (r run) checksRun() checks.LambdaRun {
	return checks.LambdaRun{State: r.state, Refused: r.refused, CitedIDs: r.cited}
}

// bruteForce groups the runs in the window at now by qid and applies
// checks.LambdaGroup: complete, convergent and flipping group counts.
func bruteForce(runs []run, spec window.Spec, now time.Time, typ string, minRuns int) (complete, conv, flips int64) {
	res := int64(spec.Resolution)
	floor := func(a int64) int64 {
		q := a / res
		if a%res != 0 && a < 0 {
			q--
		}
		return q
	}
	cur := floor(now.UnixNano())
	lo := cur - int64(spec.Length/spec.Resolution) + 1
	groups := map[string][]checks.LambdaRun{}
	for _, r := range runs {
		b := floor(r.at.UnixNano())
		if b < lo || b > cur || (typ != "" && r.typ != typ) {
			continue
		}
		groups[r.qid] = append(groups[r.qid], r.checksRun())
	}
	for _, g := range groups {
		ok, c, f := checks.LambdaGroup(g, minRuns)
		if !ok {
			continue
		}
		complete++
		if c {
			conv++
		}
		if f {
			flips++
		}
	}
	return complete, conv, flips
}

func TestLambdaRules(t *testing.T) {
	st := func(s vocab.LambdaState) run { return run{answered: true, state: s, cited: []string{"a"}} }
	plain := func(refused bool, cited ...string) run { return run{answered: true, refused: refused, cited: cited} }
	cases := []struct {
		name             string
		runs             []run
		complete, cv, fl bool
	}{
		{"two runs: incomplete", []run{st(vocab.LambdaConvergent), st(vocab.LambdaConvergent)}, false, true, false},
		{"all →", []run{st(vocab.LambdaConvergent), st(vocab.LambdaConvergent), st(vocab.LambdaConvergent)}, true, true, false},
		{"one ←", []run{st(vocab.LambdaConvergent), st(vocab.LambdaDivergent), st(vocab.LambdaConvergent)}, true, false, true},
		{"one <>", []run{st(vocab.LambdaConvergent), st(vocab.LambdaRecursive), st(vocab.LambdaConvergent)}, true, false, false},
		{"stated, decisions differ", []run{st(vocab.LambdaConvergent), {answered: true, state: vocab.LambdaConvergent, refused: true}, st(vocab.LambdaConvergent)}, true, true, false},
		{"no state, same", []run{plain(false, "a", "b"), plain(false, "b", "a", "a"), plain(false, "a", "b")}, true, true, false},
		{"no state, cited differ", []run{plain(false, "a", "b"), plain(false, "a"), plain(false, "a", "b")}, true, false, false},
		{"no state, decisions differ", []run{plain(false), plain(true), plain(false)}, true, false, true},
		{"no state, all refuse", []run{plain(true), plain(true), plain(true)}, true, true, false},
		{"mixed, agree", []run{st(vocab.LambdaConvergent), plain(false, "a"), plain(false, "a")}, true, true, false},
		{"mixed, ×", []run{st(vocab.LambdaChaotic), plain(false, "a"), plain(false, "a")}, true, false, false},
		{"mixed, ←", []run{st(vocab.LambdaDivergent), plain(false, "a"), plain(false, "a")}, true, false, true},
		{"mixed, cited differ", []run{st(vocab.LambdaConvergent), plain(false, "b"), plain(false, "a")}, true, false, false},
		{"mixed, decisions differ", []run{st(vocab.LambdaConvergent), plain(true, "a"), plain(false, "a")}, true, false, true},
		{"retrieval-only stated run", []run{{state: vocab.LambdaConvergent}, plain(false), plain(false)}, true, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var srs []checks.LambdaRun
			for _, r := range tc.runs {
				srs = append(srs, r.checksRun())
			}
			if c, cv, fl := checks.LambdaGroup(srs, 3); c != tc.complete || cv != tc.cv || fl != tc.fl {
				t.Fatalf("checks.LambdaGroup = %v %v %v, want %v %v %v: fix the table", c, cv, fl, tc.complete, tc.cv, tc.fl)
			}
			w, err := window.New(window.Config{})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range tc.runs {
				r.qid = "q"
				r.at = t0.Add(time.Duration(i) * 10 * time.Second) // one run per bucket
				if err := w.Add(r.observation(), r.at); err != nil {
					t.Fatal(err)
				}
			}
			s, _ := w.Snapshot("live", "5m", "", t0.Add(time.Minute))
			conv, flip := s.Metrics["lambda_convergence"], s.Metrics["lambda_flip_rate"]
			if !tc.complete {
				if conv.Valid || flip.Valid || conv.Samples != 0 {
					t.Errorf("incomplete group counted: %+v %+v", conv, flip)
				}
				return
			}
			want := func(b bool) float64 {
				if b {
					return 1
				}
				return 0
			}
			if conv.Samples != 1 || conv.Value != want(tc.cv) || conv.Num != want(tc.cv) || conv.Den != 1 {
				t.Errorf("lambda_convergence = %+v, want %v of 1", conv, tc.cv)
			}
			if flip.Samples != 1 || flip.Value != want(tc.fl) {
				t.Errorf("lambda_flip_rate = %+v, want %v of 1", flip, tc.fl)
			}
		})
	}
}

// TestLambdaMatchesBruteForce feeds random runs of 40 qids (split across
// buckets, types and both windows) and compares every snapshot with
// checks.LambdaGroup applied to the runs inside the window.
func TestLambdaMatchesBruteForce(t *testing.T) {
	for _, minRuns := range []int{1, 3, 5} {
		r := rand.New(rand.NewPCG(uint64(minRuns), 99))
		w, err := window.New(window.Config{LambdaMinRuns: minRuns})
		if err != nil {
			t.Fatal(err)
		}
		types := []string{"prose", "code"}
		ids := []string{"a", "b", "c"}
		// each qid has a mode: every run stated, no run stated, or mixed
		mode := make([]int, 40)
		for i := range mode {
			mode[i] = r.IntN(3)
		}
		var runs []run
		var seenComplete, seenConv, seenFlips int64
		now := t0
		for step := 0; step < 6000; step++ {
			now = now.Add(time.Duration(r.IntN(3000)) * time.Millisecond)
			q := r.IntN(len(mode))
			x := run{
				qid:      "q" + string(rune('A'+q)),
				typ:      types[q%2],
				at:       now.Add(-time.Duration(r.IntN(20)) * time.Second),
				answered: true,
				refused:  r.IntN(6) == 0,
			}
			for _, id := range ids {
				if r.IntN(5) == 0 {
					x.cited = append(x.cited, id)
				}
			}
			stated := mode[q] == 0 || (mode[q] == 2 && r.IntN(2) == 0)
			if stated {
				x.state = []vocab.LambdaState{vocab.LambdaConvergent, vocab.LambdaConvergent, vocab.LambdaConvergent,
					vocab.LambdaDivergent, vocab.LambdaRecursive, vocab.LambdaChaotic}[r.IntN(6)]
				if r.IntN(10) == 0 {
					x.answered, x.refused, x.cited = false, false, nil // retrieval-only half with a state
				}
			}
			if err := w.Add(x.observation(), now); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			runs = append(runs, x)
			if step%250 != 249 {
				continue
			}
			for _, spec := range []window.Spec{window.DefaultWindows[0], window.DefaultWindows[1]} {
				for _, typ := range []string{"", "prose", "code"} {
					complete, cv, fl := bruteForce(runs, spec, now, typ, minRuns)
					seenComplete, seenConv, seenFlips = seenComplete+complete, seenConv+cv, seenFlips+fl
					s, ok := w.Snapshot("live", spec.Name, typ, now)
					if !ok {
						t.Fatalf("no snapshot %s %q", spec.Name, typ)
					}
					conv, flip := s.Metrics["lambda_convergence"], s.Metrics["lambda_flip_rate"]
					if conv.Samples != complete || flip.Samples != complete || int64(conv.Num) != cv || int64(flip.Num) != fl {
						t.Fatalf("minRuns %d step %d window %s type %q: complete/convergent/flips = %d/%v/%v, brute force %d/%d/%d",
							minRuns, step, spec.Name, typ, conv.Samples, conv.Num, flip.Num, complete, cv, fl)
					}
					if complete > 0 && (conv.Value != float64(cv)/float64(complete) || !conv.Valid) {
						t.Fatalf("convergence value %v", conv.Value)
					}
				}
			}
		}
		if seenConv == 0 || seenFlips == 0 || seenConv+seenFlips >= seenComplete {
			t.Errorf("minRuns %d: a weak test: %d complete, %d convergent, %d flipping groups", minRuns, seenComplete, seenConv, seenFlips)
		}
		// groups leave the window: an hour after the last run nothing is left
		later := now.Add(time.Hour + time.Minute)
		for _, name := range []string{"5m", "1h"} {
			s, _ := w.Snapshot("live", name, "", later)
			if v := s.Metrics["lambda_convergence"]; v.Valid || v.Samples != 0 {
				t.Errorf("window %s an hour later: %+v", name, v)
			}
		}
		if !slices.Equal(w.Types("live"), []string{"code", "prose"}) {
			t.Errorf("types %v", w.Types("live"))
		}
	}
}
