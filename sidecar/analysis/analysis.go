// Package analysis runs canary analyses (SPEC §5.2): each compares a
// candidate arm with a baseline arm over everything both have seen since the
// analysis started, and judges a set of checks with anytime-valid confidence
// sequences (package confseq), so its verdict may be read at any moment
// without raising its error rate. Every verdict endpoint (Argo Rollouts,
// Flagger, Kayenta) answers from an analysis.
//
// # Checks
//
// A comparison check judges d = candidate − baseline of one metric against
// a tolerance t on the failing side; an absolute check judges the
// candidate's own value against a threshold. Each is judged from a
// confidence sequence whose every side holds at level 1 − α/m, m the
// number of checks with data: so the chance that a healthy candidate is
// ever failed by any check, however often the verdict is read, is at most
// α. A check is fail when its whole interval is beyond the tolerance (or
// threshold) on the failing side, pass when it is wholly on the passing
// side, else inconclusive; both need min_samples in each arm it reads.
// A check whose metric has no sample in either arm is no_data and left out.
// The analysis is fail when any check fails, pass when every check with
// data passes, else inconclusive.
//
// # Lifetime
//
// An analysis accumulates observations of its two arms whose event time is
// at or after its start. It ends when ended (DELETE) or after max_duration,
// and stays readable for retention after that. At most max_active run at
// once.
package analysis

import (
	"math"
	"slices"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis/confseq"
	"github.com/shadoweval/shadoweval/window"
)

// Result is an analysis as last judged: the body of the verdict endpoint
// (SPEC §6) and of the analyses API.
type Result struct {
	Verdict  Verdict   `json:"verdict"`
	Analysis string    `json:"analysis"`
	Arm      string    `json:"arm"`
	Baseline string    `json:"baseline"`
	CheckSet string    `json:"check_set"`
	Since    time.Time `json:"since"`
	// Ended is when the analysis ended; nil while it runs.
	Ended     *time.Time `json:"ended,omitempty"`
	EndReason string     `json:"end_reason,omitempty"`
	Alpha     float64    `json:"alpha"`
	// Events are the observations accumulated per arm.
	Events Samples `json:"events"`
	// Reason says in words why the verdict is not pass.
	Reason string        `json:"reason,omitempty"`
	Checks []CheckResult `json:"checks"`
	// Members, in a cluster, are the parts merged and their freshness.
	Members []MemberFreshness `json:"members,omitempty"`
}

// MemberFreshness is one cluster member's part in a merged answer: the
// instance that wrote it, the last stream sequence it had applied, its age
// in seconds, and whether it is older than cluster.stale_after (or there
// is none).
type MemberFreshness struct {
	Member     string  `json:"member"`
	Instance   string  `json:"instance,omitempty"`
	Applied    uint64  `json:"applied_sequence"`
	AgeSeconds float64 `json:"age_seconds"`
	Stale      bool    `json:"stale"`
	Missing    bool    `json:"missing,omitempty"`
}

// Point is one judgement of an analysis' checks, kept for the status page:
// how the intervals narrowed over time.
type Point struct {
	At      time.Time    `json:"at"`
	Verdict Verdict      `json:"verdict"`
	Checks  []CheckPoint `json:"checks"`
}

// CheckPoint is one check in a Point; Lo and Hi are NaN-free: a check
// without interval is left out (Valid false).
type CheckPoint struct {
	Estimate float64 `json:"estimate"`
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Valid    bool    `json:"valid"`
	Verdict  Verdict `json:"verdict"`
}

// narrowEvery is the period, in seconds of event time, at which each
// check's running intersection is narrowed: the resolution of the finest
// shipped window, as often as the gates are judged.
const narrowEvery = 10

// maxHistory bounds the points an analysis keeps; past it every other
// point is dropped, so the history spans the whole analysis at a coarser
// step.
const maxHistory = 240

// Spec is what an analysis is started with.
type Spec struct {
	ID       string    `json:"id"`
	Arm      string    `json:"arm"`
	Baseline string    `json:"baseline"`
	CheckSet string    `json:"checks"`
	Start    time.Time `json:"start"`
}

// Analysis is one running or ended analysis. Safe for concurrent use.
type Analysis struct {
	spec   Spec
	checks []config.AnalysisCheck
	alpha  float64

	// mu is the Manager's: one lock for every analysis, so that an event
	// takes one lock however many analyses read its arm.
	mu   *accLock
	cand *window.Cumulative
	base *window.Cumulative
	ks   []int
	// matched are the pairs of its two arms' events that it takes.
	matched *window.Matched
	cited   citedKept // the last judgement's unpacked cited ΔS pairs
	// sharedCited is the Manager's, by Matcher: the cited ΔS pairs
	// unpacked for the views that share its total (window.Matched).
	sharedCited map[*window.Matcher]*citedKept
	ended       time.Time
	endReason   string
	// The start and end (MaxInt64 while running) in Unix nanoseconds, for
	// the check every event makes.
	startNs, endNs int64
	// epoch is the Manager's count of ends, which its routes compare to
	// know that the times they keep may be out of date.
	epoch   *uint64
	history []Point
	step    int // keep one judgement of every step for the history
	tick    int
	last    Verdict // of the last Judge, for change detection
	// recorded is the judgement of the last record (Manager.Tick); nil
	// before the first.
	recorded *Result
	// frozen: the analysis has ended and been detached from the stream
	// (Manager.rerouteLocked), so nothing it holds changes any more, and
	// frozenRecorded: recorded was judged since. An ended analysis stays
	// for analysis.retention, and the tick need not judge it anew every
	// time.
	frozen, frozenRecorded bool
	// run holds each check's running intersection, narrowed once per
	// narrowEvery seconds of event time: the first event of a later period
	// than any seen (lastPeriod) narrows it with the sequences before
	// that event.
	// A count of events in stream order decides when, not the reading
	// clock, so a JetStream replay narrows it at the same points.
	run        []Bound
	lastPeriod int64
	// uncounted are the paired series whose visits its accumulators and
	// pairs leave out (window.UncountedSeries), none of which its checks
	// read.
	uncounted []string
}

func newAnalysis(mu *accLock, epoch *uint64, spec Spec, checks []config.AnalysisCheck, alpha float64, ks []int, minRuns int) *Analysis {
	startNs := spec.Start.UnixNano()
	return &Analysis{
		mu: mu, epoch: epoch, spec: spec, checks: slices.Clone(checks), alpha: alpha,
		cand: window.NewCumulative(ks, minRuns), base: window.NewCumulative(ks, minRuns),
		ks: slices.Clone(ks), matched: window.NewMatched(ks, startNs, math.MaxInt64),
		step: 1, run: make([]Bound, len(checks)),
		startNs: startNs, endNs: math.MaxInt64,
	}
}

// Spec returns what the analysis was started with.
func (an *Analysis) Spec() Spec { return an.spec }

// takesLocked reports whether an observation at event time ns (Unix
// nanoseconds), in narrowing period period, falls in the analysis' time:
// at or after its start, before its end. Before taking the first one of a
// later period it narrows the running intersection. The caller holds
// an.mu.
func (an *Analysis) takesLocked(ns, period int64) bool {
	if ns < an.startNs || ns >= an.endNs {
		return false
	}
	if period > an.lastPeriod {
		if an.lastPeriod != 0 {
			an.narrowLocked(an.narrowsLocked(period))
		}
		an.lastPeriod = period
	}
	return true
}

// narrowsLocked tells, for the narrowing at the first event of period,
// which checks it narrows (nil: none). A check undecided by its running
// bound is narrowed every period: that is what locks a pass or a fail in
// as soon as the sequence reaches it. A check its running bound already
// passes or fails keeps that verdict whatever further narrowing does (a
// narrower interval inside a passing one passes), so it is narrowed only
// at the ages decidedNarrowingBetween gives, which keep its interval close
// to the tightest its sequences reached at a fraction of the cost. Both
// depend only on the running bounds and the periods, which a checkpoint
// keeps and a replay meets in the same order.
func (an *Analysis) narrowsLocked(period int64) []bool {
	due := decidedNarrowingBetween(an.lastPeriod-an.startPeriod(), period-an.startPeriod())
	var narrows []bool
	for i, c := range an.checks {
		if !due && an.decidedLocked(i, c) {
			continue
		}
		if narrows == nil {
			narrows = make([]bool, len(an.checks))
		}
		narrows[i] = true
	}
	return narrows
}

// decidedLocked tells whether check i's running bound passes or fails it.
func (an *Analysis) decidedLocked(i int, c config.AnalysisCheck) bool {
	b := an.run[i]
	k := checkKinds[c.Kind()]
	if !b.Set || k == nil {
		return false
	}
	v, _ := k.decide(c, window.LowerIsBetter(c.Metric), confseq.Interval{Lo: b.Lo, Hi: b.Hi})
	return v == Pass || v == Fail
}

// startPeriod is the narrowing period of the analysis' start.
func (an *Analysis) startPeriod() int64 { return an.spec.Start.Unix() / narrowEvery }

// decidedNarrowingBetween tells whether a narrowing of decided checks
// falls in the periods (from, to] of the analysis' age: at each of its
// first 8 periods, then each time the age has doubled (16, 32, 64, …):
// 13 narrowings in its first hour, 18 in a day, those 8 included.
func decidedNarrowingBetween(from, to int64) bool {
	at := int64(1)
	for at <= from {
		if at < 8 {
			at++
		} else {
			at *= 2
		}
	}
	return at <= to
}

func (an *Analysis) observePair(p *window.PairObservation, t time.Time) error {
	an.mu.Lock()
	defer an.mu.Unlock()
	if t.Before(an.spec.Start) || !an.ended.IsZero() && !t.Before(an.ended) {
		return nil
	}
	if p.Arm == an.spec.Arm {
		if err := an.cand.AddPair(p); err != nil {
			return err
		}
	}
	if p.Arm == an.spec.Baseline {
		return an.base.AddPair(p)
	}
	return nil
}

// Result judges the analysis now.
func (an *Analysis) Result() Result {
	an.mu.Lock()
	defer an.mu.Unlock()
	return an.resultLocked()
}

// Recorded is the judgement of the latest Manager.Tick; ok is false before
// the first. A reader that is read often and needs no fresher answer than
// the last tick (Prometheus' scrapes) takes it rather than judging anew
// under the lock that every event takes. Its contents are shared: read
// them only. The same judgement is the same pointer, until the next tick,
// so a reader may keep what it derived from it.
func (an *Analysis) Recorded() *Result {
	an.mu.Lock()
	defer an.mu.Unlock()
	return an.recorded
}

// eventsLocked counts the events each side took.
func (an *Analysis) eventsLocked() Samples {
	return Samples{Arm: an.cand.Events(), Baseline: an.base.Events()}
}

// armsLocked is what a judgement reads of the analysis now. The pairs'
// cited ΔS unpacked before is kept, and the visits closed or left out
// since are added to it or taken from it.
func (an *Analysis) armsLocked() arms {
	return an.armsWithLocked(an.cand.Metrics(), an.base.Metrics())
}

// armsWithLocked is armsLocked with the arms' metrics already computed.
func (an *Analysis) armsWithLocked(candM, baseM map[string]window.Value) arms {
	a := arms{cand: an.cand, base: an.base, candM: candM, baseM: baseM, pairs: an.matched.Read(), ks: an.ks}
	changes, gen := a.pairs.TakeCitedChanges()
	a.citedGen, a.keep = gen, an.citedKeepLocked()
	if c := a.keep; c.sample != nil && c.of == a.pairs && c.gen == gen {
		for _, ch := range changes {
			c.sample.add(ch.Visit, float64(ch.N))
		}
		a.cited = c.sample
	} else {
		a.spare = c.sample
		*c = citedKept{}
	}
	return a
}

// citedKeepLocked is where the cited ΔS of the pairs the analysis reads
// is kept unpacked: its own, or, while its pairs are its Matcher's total,
// the one kept for every analysis reading that total, which takes the
// total's changes for all of them.
func (an *Analysis) citedKeepLocked() *citedKept {
	mt := an.matched.Shared()
	if mt == nil || an.sharedCited == nil {
		return &an.cited
	}
	k := an.sharedCited[mt]
	if k == nil {
		k = &citedKept{}
		an.sharedCited[mt] = k
	}
	return k
}

// citedKept is a citedSample and the pairs and generation it was read from.
type citedKept struct {
	of     *window.Matches
	gen    uint64
	sample *citedSample
}

// keepCitedLocked keeps the pairs' cited ΔS that a judgement unpacked, for
// the reads that follow.
func (an *Analysis) keepCitedLocked(a *arms) {
	if a.cited != nil && a.keep != nil {
		*a.keep = citedKept{of: a.pairs, gen: a.citedGen, sample: a.cited}
	}
}

// narrowLocked intersects the running bound of each check of narrows
// (narrowsLocked) with its sequence now, once both arms have
// min_samples.
func (an *Analysis) narrowLocked(narrows []bool) {
	if narrows == nil {
		return
	}
	// A check without a sequence yet (no data, or waiting for the
	// baseline) has nothing to narrow: when no other is narrowed, the
	// pairs are not folded either, which the next reading does.
	candM, baseM := an.cand.Metrics(), an.base.Metrics()
	left := false
	for i, c := range an.checks {
		k := checkKinds[c.Kind()]
		if s := (Samples{Arm: candM[c.Metric].Samples, Baseline: baseM[c.Metric].Samples}); narrows[i] && (k == nil || !k.hasData(s) || k.waiting(s) != "") {
			narrows[i] = false
		}
		left = left || narrows[i]
	}
	if !left {
		return
	}
	a := an.armsWithLocked(candM, baseM)
	a.narrowing, a.narrows = true, narrows
	res, _, _ := judge(an.checks, &a, an.alpha, an.run)
	an.keepCitedLocked(&a)
	for i := range res {
		if narrows[i] && res[i].nowOK {
			an.run[i].meet(res[i].now)
		}
	}
}

func (an *Analysis) resultLocked() Result { return an.resultWithLocked(nil) }

// resultWithLocked is resultLocked, taking the paired sequences memo
// holds and keeping those it judges there (nil: none).
func (an *Analysis) resultWithLocked(memo pairedMemo) Result {
	a := an.armsLocked()
	a.memo = memo
	checks, v, reason := judge(an.checks, &a, an.alpha, an.run)
	an.keepCitedLocked(&a)
	r := Result{
		Verdict: v, Analysis: an.spec.ID, Arm: an.spec.Arm, Baseline: an.spec.Baseline, CheckSet: an.spec.CheckSet,
		Since: an.spec.Start, Alpha: an.alpha, Events: an.eventsLocked(), Reason: reason, Checks: checks,
	}
	if !an.ended.IsZero() {
		end := an.ended
		r.Ended, r.EndReason = &end, an.endReason
	}
	return r
}

// recordLocked judges the analysis, keeps the judgement in the history
// and reports whether the verdict changed since the last record. memo
// holds the paired sequences judged since the lock was taken.
func (an *Analysis) recordLocked(now time.Time, memo pairedMemo) (Result, bool) {
	if an.frozenRecorded {
		an.last = an.recorded.Verdict
		return *an.recorded, false
	}
	an.frozenRecorded = an.frozen
	r := an.resultWithLocked(memo)
	changed := r.Verdict != an.last
	an.last = r.Verdict
	kept := r
	an.recorded = &kept
	if an.ended.IsZero() {
		an.tick++
		if an.tick%an.step == 0 {
			p := Point{At: now, Verdict: r.Verdict, Checks: make([]CheckPoint, len(r.Checks))}
			for i, c := range r.Checks {
				cp := CheckPoint{Verdict: c.Verdict}
				if c.Interval != nil && c.Estimate != nil {
					cp = CheckPoint{Estimate: *c.Estimate, Lo: c.Interval[0], Hi: c.Interval[1], Valid: true, Verdict: c.Verdict}
				}
				p.Checks[i] = cp
			}
			an.history = append(an.history, p)
			if len(an.history) >= maxHistory {
				kept := an.history[:0]
				for i := 0; i < len(an.history); i += 2 {
					kept = append(kept, an.history[i])
				}
				an.history = kept
				an.step *= 2
			}
		}
	}
	return r, changed
}

// History returns the recorded judgements, oldest first.
func (an *Analysis) History() []Point {
	an.mu.Lock()
	defer an.mu.Unlock()
	return slices.Clone(an.history)
}

// end ends the analysis at t; false when it had ended already.
func (an *Analysis) end(t time.Time, reason string) bool {
	an.mu.Lock()
	defer an.mu.Unlock()
	if !an.ended.IsZero() {
		return false
	}
	an.ended, an.endReason = t, reason
	an.endNs = t.UnixNano()
	an.matched.SetEnd(an.endNs)
	*an.epoch++
	return true
}

func (an *Analysis) endedAt() time.Time {
	an.mu.Lock()
	defer an.mu.Unlock()
	return an.ended
}

// Running reports whether the analysis has not ended.
func (an *Analysis) Running() bool { return an.endedAt().IsZero() }
