package gen

import (
	"strconv"
	"time"

	"github.com/shadoweval/shadoweval/vocab"
)

// TraceSource makes single live trace events (SPEC §2.2) for the gold set
// that WriteGold writes with the same Seed, Items, Awkward and Answerable.
// Events carry arm, event_id, request_id, paraphrase, seed, topk (with
// text), retrieved_ids (the same ids), delta_s, delta_s_cited,
// lambda_state, latency_ms, index_hash and, with Options.Now, ts. An item
// is asked as a λ group of three runs (paraphrase 0..2) most of the time,
// so λ metrics have complete groups; half the wrong groups are wrong the
// same way in every run (λ convergent). The top-k texts are the evidence
// of seed 004's triage: a gold snippet holds the passage the item's right
// claim comes from.
//
// The sequence of events is a pure function of the Options and the calls
// made (Now aside). A TraceSource is not safe for concurrent use.
type TraceSource struct {
	o       options
	g       *gen
	r       *rnd // arm choice and groups
	x       *rnd // per event
	arms    map[string]*armState
	it      goldItem
	a       answer
	buf     []byte
	started time.Time
}

type armState struct {
	name    string
	quality float64
	n       uint64 // events made
	item    int
	orphan  bool
	runs    int // runs in the current group
	left    int // runs still to send
	good    bool
	steady  bool // a wrong group whose runs all report →
	group   uint64
	last    []byte
}

// NewTraceSource returns a source of live events; see TraceSource.
func NewTraceSource(opt Options) *TraceSource {
	o := resolve(opt, true)
	s := &TraceSource{o: o, g: newGen(o), r: newRnd(), x: newRnd(), arms: make(map[string]*armState)}
	s.r.seed(o.seed, 0, sSource)
	for _, a := range o.arms {
		s.arm(a)
	}
	return s
}

func (s *TraceSource) arm(name string) *armState {
	st := s.arms[name]
	if st == nil {
		st = &armState{name: name, quality: s.o.quality}
		s.arms[name] = st
	}
	return st
}

// SetQuality changes the Quality of one arm from now on (the demo degrades
// a canary with it). q is clamped to [0,1].
func (s *TraceSource) SetQuality(arm string, q float64) {
	s.arm(arm).quality = max(0, min(1, q))
}

// Quality returns the current Quality of arm.
func (s *TraceSource) Quality(arm string) float64 { return s.arm(arm).quality }

// Next returns one event (a JSON object, no newline) for an arm drawn from
// Options.Arms. The slice is the caller's.
func (s *TraceSource) Next() []byte {
	return s.NextFor(pick(s.r, s.o.arms))
}

// NextFor returns one event for arm (any label, not only Options.Arms).
func (s *TraceSource) NextFor(arm string) []byte {
	st := s.arm(arm)
	st.n++
	if st.left == 0 {
		st.group++
		st.item = s.r.intn(s.o.items)
		st.orphan = s.r.chance(s.o.awkward / 4)
		st.runs = 1
		if s.r.chance(0.7) {
			st.runs = 3
		}
		st.left = st.runs
		st.good = s.r.chance(st.quality)
		if !st.good {
			// Pipelines go wrong more often on what they answer than by
			// answering what they cannot: on an unanswerable item a wrong
			// group gets a second chance to refuse, so under_refusal is
			// (1 − Quality)², not 1 − Quality.
			s.g.gold(&s.it, st.item)
			st.good = !s.it.answerable && s.r.chance(st.quality)
		}
		// Half the wrong groups are consistently wrong: λ convergent.
		st.steady = !st.good && s.r.chance(0.5)
	}
	run := st.runs - st.left
	st.left--

	// per-event randomness: (seed, arm, event number)
	x := s.x
	x.seed(s.o.seed^idHash(arm), st.n, sSource)
	cats := drawCats(x, s.o.awkward, sourceCats, sourceTotal)
	if cats.has(tRedelivery) && st.last != nil {
		return append([]byte(nil), st.last...)
	}
	s.g.gold(&s.it, st.item)
	// A group is right or wrong as a whole, so each run is right with
	// probability Quality and the runs of a group agree (λ convergence).
	q := 0.0
	if st.good {
		q = 1
	}
	s.g.buildTrace(&s.a, &s.it, x, cats, q)
	a := &s.a
	if run > 0 {
		a.q = pick(x, []string{"In other words: ", "Quick question: ", "Please tell me: "}) + a.q
	}
	if st.orphan || cats.has(tOrphan) {
		x2 := newRnd()
		x2.seed(s.o.seed, uint64(st.item), sOrphan)
		a.qid = s.g.orphanQID(x2, &s.it)
	}
	a.text = true
	a.topk = true
	if !a.rich {
		s.g.liveFields(a, &s.it, x, a.good)
	}
	if a.retMode == missing && !cats.has(tTopKOnly) {
		a.topk = false
	}
	if a.retMode == null || a.retMode == empty {
		a.topk = false
	}
	if a.lambda == "" {
		a.lambda = vocab.LambdaConvergent.Symbol()
	}
	switch {
	case st.steady:
		a.lambda = vocab.LambdaConvergent.Symbol()
	case !st.good && run > 0 && x.chance(0.5):
		a.lambda = pick(x, lambdaStates[1:])
	}
	live := liveInfo{
		arm:        arm,
		eventID:    "ev-" + strconv.FormatUint(s.o.seed, 36) + "-" + arm + "-" + strconv.FormatUint(st.n, 10),
		requestID:  "req-" + strconv.FormatUint(mix(s.o.seed^idHash(arm)^st.n), 36),
		paraphrase: run,
		seed:       int(st.group % 1000),
		latency:    x.unif(20, 900),
		indexHash:  "idx-" + strconv.FormatUint(s.o.seed%9973, 16),
	}
	if s.o.now != nil {
		live.ts = s.o.now().UTC().Format(time.RFC3339Nano)
	}
	s.buf, _ = s.g.appendTrace(s.buf[:0], a, &s.it, x, cats, arm, &live)
	st.last = append(st.last[:0], s.buf...)
	return append([]byte(nil), s.buf...)
}
