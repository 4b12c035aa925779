package analysis

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/window"
)

// Errors of Start. The HTTP API answers 400 for ErrBadRequest and 429 for
// ErrTooMany; both are wrapped with the reason.
var (
	ErrBadRequest = errors.New("bad analysis request")
	ErrTooMany    = errors.New("too many active analyses")
	ErrConflict   = errors.New("analysis exists with another spec")
)

// DefaultBaseline is the baseline arm of an analysis that names none.
const DefaultBaseline = "live"

// maxNameLen bounds analysis ids and arm names.
const maxNameLen = 128

// Options configure a Manager.
type Options struct {
	Config  config.AnalysisConfig
	Ks      []int // the windows' cut-offs
	MinRuns int   // lambda.min_runs
	// Persist, when set, is called after an analysis starts or ends (not
	// under the Manager's lock), so that it outlives a kill -9 at once.
	Persist func(*Analysis)
	// StartDelay starts a new analysis this long after its request: in a
	// cluster, every member learns of it before its first event.
	StartDelay time.Duration
	// Lateness is how late an event may come (window.max_lateness); 0:
	// window.DefaultMaxLateness.
	Lateness time.Duration
}

// Manager holds the analyses: it starts, routes observations to, judges,
// ends and forgets them. Safe for concurrent use.
type Manager struct {
	cfg     config.AnalysisConfig
	ks      []int
	minRuns int
	persist func(*Analysis)
	// startDelay puts a new analysis' start this far after its request.
	startDelay time.Duration
	lateness   time.Duration

	mu   sync.RWMutex
	byID map[string]*Analysis
	// acc guards every analysis' state (Analysis.mu) and lambdas, and
	// holds the accepted observations not yet counted (accLock).
	acc accLock
	// shared holds, per arm, what the running analyses reading it share
	// (window.Shared): an event is counted once for all of them, and its
	// qid's λ groups are found once.
	shared map[string]*window.Shared
	// matchers holds, per [candidate, baseline] arms of running analyses,
	// the matching of their events (SPEC §5.3), under acc.
	matchers map[[2]string]*window.Matcher
	// citedShared keeps, per matcher, the cited ΔS pairs unpacked for the
	// analyses that read its total (Analysis.sharedCited), under acc.
	citedShared map[*window.Matcher]*citedKept
	// uncounted are the paired series whose visits no configured check
	// reads (window.UncountedSeries): no Shared or Matcher keeps them.
	uncounted []string
	// prepared is the observation being added, under acc.
	prepared window.Prepared
	// epoch counts the analyses ended, under acc: a route whose epoch is
	// older may keep an end time that has changed.
	epoch uint64
	// route maps an arm to the running analyses that read it; replaced on
	// every start and end, so Observe reads it without a lock.
	route atomic.Pointer[routes]
}

// NewManager returns a Manager with no analysis.
func NewManager(opt Options) *Manager {
	m := &Manager{cfg: opt.Config, ks: slices.Clone(opt.Ks), minRuns: opt.MinRuns, persist: opt.Persist, startDelay: opt.StartDelay, byID: map[string]*Analysis{}, shared: map[string]*window.Shared{}, matchers: map[[2]string]*window.Matcher{}, citedShared: map[*window.Matcher]*citedKept{}}
	if m.cfg.Checks == nil {
		m.cfg.Checks = config.DefaultCheckSets()
	}
	if m.cfg.Alpha <= 0 {
		m.cfg.Alpha = config.DefaultAnalysisAlpha
	}
	if m.cfg.MaxActive <= 0 {
		m.cfg.MaxActive = config.DefaultAnalysisMaxActive
	}
	if m.cfg.PairHorizon <= 0 {
		m.cfg.PairHorizon = config.Duration(config.DefaultPairHorizon)
	}
	if m.cfg.PairMaxPending <= 0 {
		m.cfg.PairMaxPending = config.DefaultPairMaxPending
	}
	if m.cfg.VisitGap <= 0 {
		m.cfg.VisitGap = config.Duration(config.DefaultVisitGap)
	}
	var metrics []string
	for _, set := range m.cfg.Checks {
		for _, c := range set {
			metrics = append(metrics, c.Metric)
		}
	}
	m.uncounted = window.UncountedSeries(m.ks, metrics)
	m.lateness = cmp.Or(opt.Lateness, window.DefaultMaxLateness)
	m.route.Store(&routes{})
	m.acc.m = m
	return m
}

// StartRequest is the body of POST /api/v1/analyses.
type StartRequest struct {
	ID       string `json:"id"`
	Arm      string `json:"arm"`
	Baseline string `json:"baseline"`
	Checks   string `json:"checks"`
}

// CheckSets lists the configured check sets' names.
func (m *Manager) CheckSets() []string {
	names := make([]string, 0, len(m.cfg.Checks))
	for n := range m.cfg.Checks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// nameProblem says what is wrong with an id or arm name, "" when nothing.
func nameProblem(what, s string, dots bool) string {
	if s == "" {
		return what + " is empty"
	}
	if len(s) > maxNameLen {
		return fmt.Sprintf("%s is %d bytes long, at most %d", what, len(s), maxNameLen)
	}
	for _, r := range s {
		ok := r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-' || r == ':' || dots && r == '.')
		if !ok {
			allowed := "letters, digits, '_', '-' and ':'"
			if dots {
				allowed = "letters, digits, '_', '-', ':' and '.'"
			}
			return fmt.Sprintf("%s %q has %q; use %s", what, s, r, allowed)
		}
	}
	return ""
}

// Start starts the analysis req describes at now, or returns the existing
// one of that id (created false). Defaults: arm canary, baseline live,
// checks canary, id the arm's name.
func (m *Manager) Start(req StartRequest, now time.Time) (Result, bool, error) {
	if req.Arm == "" {
		req.Arm = "canary"
	}
	if req.Baseline == "" {
		req.Baseline = DefaultBaseline
	}
	if req.Checks == "" {
		req.Checks = config.CanaryCheckSet
	}
	if req.ID == "" {
		req.ID = req.Arm
	}
	for _, p := range []string{nameProblem("id", req.ID, true), nameProblem("arm", req.Arm, false), nameProblem("baseline", req.Baseline, false)} {
		if p != "" {
			return Result{}, false, fmt.Errorf("%w: %s", ErrBadRequest, p)
		}
	}
	if req.Arm == req.Baseline {
		return Result{}, false, fmt.Errorf("%w: arm and baseline are both %q", ErrBadRequest, req.Arm)
	}
	checks, ok := m.cfg.Checks[req.Checks]
	if !ok {
		return Result{}, false, fmt.Errorf("%w: unknown check set %q (configured: %s)", ErrBadRequest, req.Checks, strings.Join(m.CheckSets(), ", "))
	}
	m.mu.Lock()
	if an, ok := m.byID[req.ID]; ok {
		m.mu.Unlock()
		return an.Result(), false, nil
	}
	if n := m.activeLocked(); n >= m.cfg.MaxActive {
		m.mu.Unlock()
		return Result{}, false, fmt.Errorf("%w: %d of analysis.max_active %d are running; end one (DELETE /api/v1/analyses/{id}) first", ErrTooMany, n, m.cfg.MaxActive)
	}
	an := newAnalysis(&m.acc, &m.epoch, Spec{ID: req.ID, Arm: req.Arm, Baseline: req.Baseline, CheckSet: req.Checks, Start: now.Add(m.startDelay)}, checks, m.cfg.Alpha, m.ks, m.minRuns)
	an.sharedCited = m.citedShared
	an.uncounted = slices.Clone(m.uncounted)
	m.byID[req.ID] = an
	m.rerouteLocked()
	m.mu.Unlock()
	if m.persist != nil {
		m.persist(an)
	}
	return an.Result(), true, nil
}

// Restore adds an analysis as saved (Saved), replacing one of the same id.
func (m *Manager) Restore(s Saved) error {
	for _, p := range []string{nameProblem("id", s.Spec.ID, true), nameProblem("arm", s.Spec.Arm, false), nameProblem("baseline", s.Spec.Baseline, false)} {
		if p != "" {
			return fmt.Errorf("analysis checkpoint: %s", p)
		}
	}
	checks, ok := m.cfg.Checks[s.Spec.CheckSet]
	if !ok {
		return fmt.Errorf("analysis %q: check set %q is no longer configured", s.Spec.ID, s.Spec.CheckSet)
	}
	an := newAnalysis(&m.acc, &m.epoch, s.Spec, checks, m.cfg.Alpha, m.ks, m.minRuns)
	an.sharedCited = m.citedShared
	an.uncounted = slices.Clone(m.uncounted)
	if err := an.load(s); err != nil {
		return fmt.Errorf("analysis %q: %w", s.Spec.ID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.byID[s.Spec.ID]; ok {
		m.acc.Lock()
		old.cand.Detach()
		old.base.Detach()
		old.matched.Detach()
		m.acc.Unlock()
	}
	m.byID[s.Spec.ID] = an
	m.rerouteLocked()
	return nil
}

func (m *Manager) activeLocked() int {
	n := 0
	for _, an := range m.byID {
		if an.endedAt().IsZero() {
			n++
		}
	}
	return n
}

// routes maps each arm to its armRoute.
type routes struct {
	byArm map[string]*armRoute
	list  []armEntry // the same, for the few arms a sidecar has
}

type armEntry struct {
	arm string
	r   *armRoute
}

// find is byArm[arm]: a scan while there are few arms, cheaper than
// hashing the name for every event.
func (t *routes) find(arm string) *armRoute {
	if len(t.list) <= 8 {
		for i := range t.list {
			if t.list[i].arm == arm {
				return t.list[i].r
			}
		}
		return nil
	}
	return t.byArm[arm]
}

// armRoute is what an observation of one arm reaches: each side of a
// running analysis that the arm is, and the arm's Shared they follow.
type armRoute struct {
	sides []side
	sh    *window.Shared
	// feeds are the matchers the arm is a side of.
	feeds []matchFeed
	// Under acc: every side takes an event at or after lo, before hi, in
	// a narrowing period no later than last (each side's has begun), and
	// its visit when at or after visitsFrom (past the visit span of every
	// side's start), as long as epoch is the Manager's. Kept so that such
	// an event, most of them, reaches no analysis but through sh.
	lo, hi, last, visitsFrom int64
	epoch                    uint64
}

// refreshLocked works out r's times from its sides.
func (r *armRoute) refreshLocked(epoch uint64) {
	r.lo, r.hi, r.last, r.epoch = math.MinInt64, math.MaxInt64, math.MaxInt64, epoch
	for _, s := range r.sides {
		r.lo, r.hi, r.last = max(r.lo, s.an.startNs), min(r.hi, s.an.endNs), min(r.last, s.an.lastPeriod)
	}
	r.visitsFrom = math.MinInt64
	if r.lo != math.MinInt64 {
		gap := int64(r.sh.VisitGap())
		r.visitsFrom = (window.VisitSpan(r.lo, gap) + 1) * gap
	}
}

type side struct {
	an   *Analysis
	cu   *window.Cumulative
	cand bool
}

// matchFeed is a matcher an arm's observations go to, and which side they are.
type matchFeed struct {
	mt   *window.Matcher
	side int
}

// rerouteLocked rebuilds the arm → analyses table from the running ones,
// attaches them to their arms' Shared and Matcher and detaches the ended
// ones.
func (m *Manager) rerouteLocked() {
	m.acc.Lock()
	defer m.acc.Unlock()
	for _, an := range m.byID {
		if !an.ended.IsZero() {
			an.cand.Detach()
			an.base.Detach()
			an.matched.Detach()
			an.frozen = true
		}
	}
	route := map[string]*armRoute{}
	routeOf := func(arm string) *armRoute {
		r := route[arm]
		if r == nil {
			r = &armRoute{sh: m.shared[arm]}
			if r.sh == nil {
				r.sh = window.NewShared(m.ks)
				r.sh.SetVisitGap(time.Duration(m.cfg.VisitGap))
				r.sh.SetUncounted(m.uncounted)
			}
			route[arm] = r
		}
		return r
	}
	add := func(arm string, s side) {
		r := routeOf(arm)
		s.cu.AttachTo(r.sh)
		r.sides = append(r.sides, s)
	}
	matchers := map[[2]string]*window.Matcher{}
	for _, an := range m.byID {
		if !an.ended.IsZero() {
			continue
		}
		add(an.spec.Arm, side{an, an.cand, true})
		add(an.spec.Baseline, side{an, an.base, false})
		key := [2]string{an.spec.Arm, an.spec.Baseline}
		mt := matchers[key]
		if mt == nil {
			if mt = m.matchers[key]; mt == nil {
				mt = window.NewMatcher(window.MatchOptions{Ks: m.ks, MinRuns: m.minRuns,
					Horizon: int64(time.Duration(m.cfg.PairHorizon)), MaxPending: m.cfg.PairMaxPending,
					Gap: int64(time.Duration(m.cfg.VisitGap)), Lateness: int64(m.lateness), Uncounted: m.uncounted})
			}
			matchers[key] = mt
			routeOf(key[0]).feeds = append(routeOf(key[0]).feeds, matchFeed{mt, window.Candidate})
			routeOf(key[1]).feeds = append(routeOf(key[1]).feeds, matchFeed{mt, window.Baseline})
		}
		an.matched.AttachTo(mt)
	}
	shared := map[string]*window.Shared{}
	table := &routes{byArm: route}
	for arm, r := range route {
		shared[arm] = r.sh
		r.refreshLocked(m.epoch)
		table.list = append(table.list, armEntry{arm, r})
	}
	m.shared = shared
	m.matchers = matchers
	running := map[*window.Matcher]bool{}
	for _, mt := range matchers {
		running[mt] = true
	}
	for mt := range m.citedShared {
		if !running[mt] {
			delete(m.citedShared, mt)
		}
	}
	m.route.Store(table)
}

// Get returns the analysis of id.
func (m *Manager) Get(id string) (*Analysis, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	an, ok := m.byID[id]
	return an, ok
}

// List returns every analysis, running ones first, each group by start.
func (m *Manager) List() []*Analysis {
	m.mu.RLock()
	list := make([]*Analysis, 0, len(m.byID))
	for _, an := range m.byID {
		list = append(list, an)
	}
	m.mu.RUnlock()
	sort.Slice(list, func(i, j int) bool {
		ei, ej := list[i].endedAt().IsZero(), list[j].endedAt().IsZero()
		if ei != ej {
			return ei
		}
		si, sj := list[i].spec.Start, list[j].spec.Start
		if !si.Equal(sj) {
			return si.Before(sj)
		}
		return list[i].spec.ID < list[j].spec.ID
	})
	return list
}

// Active is the number of running analyses.
func (m *Manager) Active() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.activeLocked()
}

// End ends the analysis of id at now; it stays readable for
// analysis.retention. False when there is none; ending an ended one does
// nothing.
func (m *Manager) End(id string, now time.Time) (*Analysis, bool) {
	m.mu.Lock()
	an, ok := m.byID[id]
	if !ok {
		m.mu.Unlock()
		return nil, false
	}
	ended := an.end(now, "ended")
	if ended {
		m.rerouteLocked()
	}
	m.mu.Unlock()
	if ended && m.persist != nil {
		m.persist(an)
	}
	return an, true
}

// Observe adds o, whose event time is t, to every running analysis that
// reads its arm. An invalid observation is refused, and no analysis takes
// it.
func (m *Manager) Observe(o *window.Observation, t time.Time) error {
	return m.observe(o, t, false)
}

// ObserveAccepted is Observe for an observation the windows accepted,
// which check it as Observe does. It is held and counted in a batch
// (accLock), before anything reads or changes the analyses; o is copied,
// and the caller may reuse it.
func (m *Manager) ObserveAccepted(o *window.Observation, t time.Time) error {
	return m.observe(o, t, true)
}

func (m *Manager) observe(o *window.Observation, t time.Time, accepted bool) error {
	arm := o.Arm
	if arm == "" {
		arm = window.DefaultArm
	}
	table := m.route.Load()
	r := table.find(arm)
	if r == nil {
		return nil
	}
	ns, period := t.UnixNano(), t.Unix()/narrowEvery
	if accepted && len(m.ks) <= window.MaxCutoffs {
		// Counting it cannot fail: it waits for the batch (accLock).
		m.acc.mu.Lock()
		defer m.acc.mu.Unlock()
		if r = m.routeLocked(table, arm, r); r != nil {
			m.acc.hold(o, ns, period, r)
		}
		return nil
	}
	m.acc.Lock()
	defer m.acc.Unlock()
	if r = m.routeLocked(table, arm, r); r == nil {
		return nil
	}
	return m.observeLocked(o, ns, period, r, accepted)
}

// routeLocked is r, read from table for arm, or read again from the
// route now: rerouteLocked attaches and detaches under acc, so a route
// replaced since it was read is read again, so that it and its Shared
// agree.
func (m *Manager) routeLocked(table *routes, arm string, r *armRoute) *armRoute {
	if now := m.route.Load(); now != table {
		return now.find(arm)
	}
	return r
}

// observeLocked counts o, at event time ns in narrowing period period, in
// the analyses of route r.
func (m *Manager) observeLocked(o *window.Observation, ns, period int64, r *armRoute, accepted bool) error {
	// Counted once in the arm's Shared, which the accumulators of every
	// analysis reading the arm follow. Most events fall in the time of
	// every analysis and in a narrowing period already begun: those go to
	// all of the route's accumulators at once, and an observation the
	// windows accepted (and checked as Prepare does) is counted straight
	// from its fields.
	if m.epoch == r.epoch && ns >= r.lo && ns >= r.visitsFrom && ns < r.hi && period <= r.last {
		if accepted {
			r.sh.AddAllAccepted(o, ns)
			r.match(o, ns)
			return nil
		}
		if err := window.Prepare(o, len(m.ks), &m.prepared); err != nil {
			return err
		}
		m.prepared.SetTime(ns)
		r.sh.AddAll(&m.prepared)
		r.match(o, ns)
		return nil
	}
	// Otherwise it is digested once, into the Manager's own Prepared (acc
	// is held, and a fresh one would be cleared every event), for the
	// accumulators that take it and those that exclude it.
	var err error
	if accepted {
		err = window.PrepareAccepted(o, len(m.ks), &m.prepared)
	} else {
		err = window.Prepare(o, len(m.ks), &m.prepared)
	}
	if err != nil {
		return err
	}
	m.prepared.SetTime(ns)
	m.observeSomeLocked(r, ns, period)
	r.refreshLocked(m.epoch)
	r.match(o, ns)
	return nil
}

// match offers an observation of r's arm at event time ns to the
// matchers the arm is a side of.
func (r *armRoute) match(o *window.Observation, ns int64) {
	for _, f := range r.feeds {
		f.mt.Offer(f.side, o, ns)
	}
}

// observeSomeLocked adds m.prepared to the accumulators of r whose
// analyses take it and excludes it from the others. Narrowing, in
// takesLocked, reads the accumulators before the event.
func (m *Manager) observeSomeLocked(r *armRoute, ns, period int64) {
	p := &m.prepared
	take := make([]*window.Cumulative, 0, len(r.sides))
	var skip, noVisit []*window.Cumulative
	gap := int64(r.sh.VisitGap())
	for _, s := range r.sides {
		if !s.an.takesLocked(ns, period) {
			skip = append(skip, s.cu)
			continue
		}
		take = append(take, s.cu)
		if window.VisitSpan(ns, gap) == window.VisitSpan(s.an.startNs, gap) {
			noVisit = append(noVisit, s.cu)
		}
	}
	r.sh.Add(p)
	window.AddRuns(take, p)
	for _, cu := range skip {
		cu.Exclude(p)
	}
	for _, cu := range noVisit {
		cu.ExcludeVisit(p)
	}
}

// ObservePair adds a judgement pair at t to the analyses reading its arm.
func (m *Manager) ObservePair(p *window.PairObservation, t time.Time) error {
	arm := p.Arm
	if arm == "" {
		arm = window.DefaultArm
	}
	q := *p
	q.Arm = arm
	r := m.route.Load().find(arm)
	if r == nil {
		return nil
	}
	for _, s := range r.sides {
		if err := s.an.observePair(&q, t); err != nil {
			return err
		}
	}
	m.acc.Lock()
	defer m.acc.Unlock()
	for _, f := range r.feeds {
		if err := f.mt.OfferJudged(f.side, &q, t.UnixNano()); err != nil {
			return err
		}
	}
	return nil
}

// Tick judges every running analysis at now and records the judgement in
// its history, ends those past analysis.max_duration and forgets ended ones
// past analysis.retention. It returns the analyses whose verdict changed
// (a new analysis' first verdict counts only when it is not inconclusive)
// and those it forgot.
func (m *Manager) Tick(now time.Time) (changed []Result, forgotten []string) {
	maxDur, keep := time.Duration(m.cfg.MaxDuration), time.Duration(m.cfg.Retention)
	m.mu.Lock()
	rerouted := false
	var timedOut []*Analysis
	for id, an := range m.byID {
		ended := an.endedAt()
		switch {
		case ended.IsZero() && maxDur > 0 && now.Sub(an.spec.Start) >= maxDur:
			an.end(an.spec.Start.Add(maxDur), "max_duration")
			timedOut = append(timedOut, an)
			rerouted = true
		case !ended.IsZero() && keep > 0 && now.Sub(ended) >= keep:
			delete(m.byID, id)
			forgotten = append(forgotten, id)
			rerouted = true
		}
	}
	if rerouted {
		m.rerouteLocked()
	}
	list := make([]*Analysis, 0, len(m.byID))
	for _, an := range m.byID {
		list = append(list, an)
	}
	m.mu.Unlock()
	if m.persist != nil {
		for _, an := range timedOut {
			m.persist(an)
		}
	}
	// Analyses that read one matcher's total are judged under one hold of
	// the lock, so that those judging its pairs at the same levels find
	// their paired sequences computed once (pairedMemo): nothing is
	// counted between their judgements. Between the others the lock is
	// let go, for the events waiting on it. Sorted by arms, those sharing
	// a total come together.
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].spec, list[j].spec
		return a.Arm < b.Arm || a.Arm == b.Arm && (a.Baseline < b.Baseline || a.Baseline == b.Baseline && a.ID < b.ID)
	})
	memo := pairedMemo{}
	var total *window.Matcher // the total memo's sequences were judged on
	m.acc.Lock()
	for i, an := range list {
		if shared := an.matched.Shared(); i > 0 && (shared == nil || shared != total) {
			m.acc.Unlock()
			m.acc.Lock()
			clear(memo)
		}
		total = an.matched.Shared()
		first := an.last == ""
		r, ch := an.recordLocked(now, memo)
		if ch && !(first && r.Verdict == Inconclusive) {
			changed = append(changed, r)
		}
	}
	m.acc.Unlock()
	sort.Slice(changed, func(i, j int) bool { return changed[i].Analysis < changed[j].Analysis })
	sort.Strings(forgotten)
	return changed, forgotten
}

func (an *Analysis) lastVerdict() Verdict {
	an.mu.Lock()
	defer an.mu.Unlock()
	return an.last
}

// EarliestStart is the start of the oldest running analysis (zero when
// none): how far back a JetStream replay must reach to rebuild them.
func (m *Manager) EarliestStart() time.Time {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var t time.Time
	for _, an := range m.byID {
		if an.endedAt().IsZero() && (t.IsZero() || an.spec.Start.Before(t)) {
			t = an.spec.Start
		}
	}
	return t
}
