package analysissim

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/internal/sim/testbed"
	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// The realistic simulation (package internal/sim/testbed) drives the wire
// format through the live path's own parts: the stream decoders, the
// split-event joiner, sidecar/checks and the windows' lateness rule turn
// each message into observations, which the judges read as in Run. Only
// the sidecar's idempotency and Scholar/Auditor pairing are done here, by
// their rules (an event_id of a kind and arm counts once; a judgement
// waits for the other agent's of the same arm and request).

// RealScenario is one deployment of the realistic simulation: the
// candidate's index (or shadow traffic) against live.
type RealScenario struct {
	Name string
	// Candidate is the candidate arm: "canary", or "shadow" answering
	// live's requests.
	Candidate string
	// Index derives the candidate's index from live's, with a seed.
	Index func(live *testbed.Index, seed uint64) *testbed.Index
	Bad   bool
	// Horizon is how long a run lasts.
	Horizon time.Duration
	// DegradeAt, when set, is when the candidate's index becomes
	// Degraded's: a deployment that changes during its analysis.
	DegradeAt time.Duration
	Degraded  func(live *testbed.Index, seed uint64) *testbed.Index
}

// RealTraffic is the realistic simulation's deployment.
type RealTraffic struct {
	CanaryRate, LiveRate float64 // runs per second; a shadow answers every live run
	ReadEvery            time.Duration
	WarmUp               time.Duration // live alone first
	Params               testbed.Params
	Shape                testbed.Shape
}

// DefaultRealTraffic: canary 4 runs/s, live 16/s, the verdict read every
// 10 s, 5 minutes of live first, the testbed's default model and shape.
var DefaultRealTraffic = RealTraffic{CanaryRate: 4, LiveRate: 16, ReadEvery: 10 * time.Second, WarmUp: 5 * time.Minute,
	Params: testbed.Default, Shape: testbed.DefaultShape}

// RealScenarios are the scenarios of the realistic simulation.
func RealScenarios() []RealScenario {
	same := func(live *testbed.Index, _ uint64) *testbed.Index { return live }
	worse := func(points float64) func(*testbed.Index, uint64) *testbed.Index {
		return func(live *testbed.Index, seed uint64) *testbed.Index { return live.Worse(points, seed) }
	}
	return []RealScenario{
		{Name: "identical", Candidate: "canary", Index: same, Horizon: time.Hour},
		{Name: "healthy, 10 % of questions redrawn", Candidate: "canary", Index: func(live *testbed.Index, seed uint64) *testbed.Index {
			return live.Redraw(0.10, seed)
		}, Horizon: time.Hour},
		{Name: "shadow of live, by request", Candidate: "shadow", Index: same, Horizon: time.Hour},
		{Name: "precision −1 pt", Candidate: "canary", Index: worse(0.01), Horizon: time.Hour},
		{Name: "precision −3 pts", Candidate: "canary", Index: worse(0.03), Bad: true, Horizon: time.Hour},
		{Name: "precision −5 pts", Candidate: "canary", Index: worse(0.05), Bad: true, Horizon: 30 * time.Minute},
		{Name: "precision −10 pts", Candidate: "canary", Index: worse(0.10), Bad: true, Horizon: 30 * time.Minute},
		{Name: "ΔS p90 +0.05", Candidate: "canary", Index: func(live *testbed.Index, _ uint64) *testbed.Index {
			return live.StretchDeltaS(0.05)
		}, Bad: true, Horizon: 30 * time.Minute},
	}
}

// RunReal simulates runs deployments of sc, each judged by every judge,
// as Run does with the traffic model of the testbed.
func RunReal(runs int, seed uint64, tr RealTraffic, sc RealScenario, js []Judge, workers int) (*Result, error) {
	start := time.Now()
	res := &Result{Scenario: Scenario{Name: sc.Name, Bad: sc.Bad, Horizon: sc.Horizon}, Runs: make([][]Outcome, len(js)), Diags: make([][]Diag, len(js))}
	res.Traffic = Traffic{CanaryRate: tr.CanaryRate, LiveRate: tr.LiveRate, GoldItems: tr.Params.Questions, ReadEvery: tr.ReadEvery, WarmUp: tr.WarmUp}
	if sc.Candidate == "shadow" {
		res.Traffic.CanaryRate = tr.LiveRate
	}
	err := res.run(runs, js, workers, func(r int) error { return runReal(r, seed, tr, sc, js, res) })
	res.Elapsed = time.Since(start)
	return res, err
}

func runReal(r int, seed uint64, tr RealTraffic, sc RealScenario, js []Judge, res *Result) error {
	cfg := config.Default()
	runSeed := seed<<20 ^ uint64(r)
	world := testbed.NewWorld(tr.Params, runSeed)
	live := world.NewIndex(runSeed ^ 0x11)
	cand := sc.Index(live, runSeed^0x22)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	arms := []testbed.ArmTraffic{{Name: "live", Index: live, Rate: tr.LiveRate}}
	if sc.Candidate == "shadow" {
		arms = append(arms, testbed.ArmTraffic{Name: "shadow", Index: cand, Mirror: "live", MirrorLag: 2 * time.Second})
	}
	traffic := testbed.NewTraffic(world, tr.Shape, arms, runSeed^0x33, t0.Add(-tr.WarmUp))
	in, err := newIngest(world, cfg)
	if err != nil {
		return err
	}
	e := &env{seed: runSeed, t0: t0, cand: sc.Candidate, canary: newSeries(cfg.K, cfg.Lambda.MinRuns), live: newSeries(cfg.K, cfg.Lambda.MinRuns)}
	if err := e.judgeWith(js, cfg); err != nil {
		return err
	}
	out := newOutcomes(len(js))
	var feedErr error
	feed := func(m *testbed.Message) {
		if feedErr == nil {
			feedErr = in.message(m, e)
		}
	}
	// Live alone first; the canary's traffic starts at t0.
	traffic.Until(t0, feed)
	if sc.Candidate == "canary" {
		traffic = traffic.With(testbed.ArmTraffic{Name: "canary", Index: cand, Rate: tr.CanaryRate}, t0)
	}
	done := make([]bool, len(js))
	degraded := sc.DegradeAt <= 0
	for at := tr.ReadEvery; at <= sc.Horizon; at += tr.ReadEvery {
		now := t0.Add(at)
		if !degraded && at > sc.DegradeAt {
			traffic.Until(t0.Add(sc.DegradeAt), feed)
			traffic.SetIndex(sc.Candidate, sc.Degraded(live, runSeed^0x44))
			degraded = true
		}
		traffic.Until(now, feed)
		if err := in.expire(now, e); err != nil {
			return err
		}
		if feedErr != nil {
			return feedErr
		}
		// A run goes on after a decision to see whether the verdict ever
		// turns; a bad one only until its first fail.
		decided := func(oc *Outcome, diag bool) bool { return sc.Bad && oc.FailAt >= 0 && !diag }
		if e.readJudges(now, at, sc.Horizon, traffic.Runs(sc.Candidate), js, out, done, decided) {
			break
		}
	}
	res.store(r, e, out)
	return nil
}

// ingest turns testbed messages into observations as the sidecar's ingest
// does, and hands them to the run's env.
type ingest struct {
	gold    map[string]*checks.Gold
	opt     checks.Options
	joiner  *wire.Joiner
	late    *window.Windows
	seen    map[string]bool
	pending map[[2]string]wire.Judgement
	obs     window.Observation
}

func newIngest(w *testbed.World, cfg config.Config) (*ingest, error) {
	in := &ingest{gold: map[string]*checks.Gold{}, opt: checks.Options{Ks: cfg.K, Tolerance: int64(cfg.CitationOffsetTolerance)},
		joiner: wire.NewJoiner(time.Duration(cfg.Join.TTL), cfg.Join.MaxPending), seen: map[string]bool{}, pending: map[[2]string]wire.Judgement{}}
	for i := range w.Questions {
		g, err := wire.DecodeGold(w.GoldLine(i))
		if err != nil {
			return nil, fmt.Errorf("testbed gold line %d: %w", i+1, err)
		}
		cg := checks.NewGold(g)
		cg.Key = uint32(i + 1)
		in.gold[g.QID] = cg
	}
	var specs []window.Spec
	for _, ws := range cfg.Windows {
		specs = append(specs, window.Spec{Name: ws.Name(), Length: time.Duration(ws.Length), Resolution: time.Duration(ws.Resolution)})
	}
	var err error
	in.late, err = window.New(window.Config{Windows: specs, Ks: cfg.K, LambdaMinRuns: cfg.Lambda.MinRuns, MaxLateness: time.Duration(cfg.Window.MaxLateness)})
	return in, err
}

func kindOf(subject string) wire.Kind {
	switch {
	case strings.HasPrefix(subject, "rag.retrieval."):
		return wire.KindRetrieval
	case strings.HasPrefix(subject, "rag.answer."):
		return wire.KindAnswer
	case strings.HasPrefix(subject, "rag.judgement."):
		return wire.KindJudgement
	}
	return wire.KindTrace
}

func (in *ingest) message(m *testbed.Message, e *env) error {
	kind := kindOf(m.Subject)
	if kind == wire.KindJudgement {
		j, err := wire.DecodeJudgement(m.Data)
		if err != nil {
			return err
		}
		key := [2]string{j.Arm, j.RequestID}
		first, ok := in.pending[key]
		if !ok || first.Agent == j.Agent {
			in.pending[key] = j
			return nil
		}
		delete(in.pending, key)
		scholar, auditor := first, j
		if j.Agent == "scholar" {
			scholar, auditor = j, first
		}
		p := window.PairObservation{Arm: j.Arm, QID: j.QID, RequestID: j.RequestID, Time: m.Arrive, Scholar: scholar.Label, Auditor: auditor.Label}
		// As the sidecar does: a pair the windows refuse as late is counted
		// there, not judged.
		switch err := in.late.AddPair(&p, m.Arrive); {
		case errors.Is(err, window.ErrLate):
			return nil
		case err != nil:
			return err
		}
		return e.pair(&p)
	}
	ev, err := wire.DecodeTrace(m.Data)
	if err != nil {
		return err
	}
	id := kind.String() + "/" + ev.Arm + "/" + ev.EventID
	if in.seen[id] {
		return nil // a duplicate
	}
	in.seen[id] = true
	if kind == wire.KindTrace {
		return in.score(&ev, true, m.Arrive, e)
	}
	merged, joined, evicted, err := in.joiner.Offer(kind, ev, m.Arrive)
	if err != nil {
		return err
	}
	if err := in.settle(evicted, m.Arrive, e); err != nil {
		return err
	}
	if joined {
		return in.score(&merged, true, m.Arrive, e)
	}
	return nil
}

// expire scores the retrieval halves whose answers never came.
func (in *ingest) expire(now time.Time, e *env) error {
	return in.settle(in.joiner.Expire(now), now, e)
}

func (in *ingest) settle(gone []wire.Pending, now time.Time, e *env) error {
	for i := range gone {
		if p := &gone[i]; p.Kind == wire.KindRetrieval && p.Reason != wire.ReasonReplaced {
			if err := in.score(&p.Event, false, now, e); err != nil {
				return err
			}
		}
	}
	return nil
}

func (in *ingest) score(ev *wire.TraceEvent, hasAnswer bool, now time.Time, e *env) error {
	g, ok := in.gold[ev.QID]
	if !ok {
		return fmt.Errorf("qid %q is not in the testbed's gold set", ev.QID)
	}
	o := &in.obs
	if err := checks.Evaluate(ev, g, hasAnswer, in.opt, o); err != nil {
		return err
	}
	switch err := in.late.Add(o, now); {
	case errors.Is(err, window.ErrLate):
		return nil
	case err != nil:
		return err
	}
	return e.observe(o)
}
