// Package eval is `shadoweval eval` (SPEC §7): the offline evaluation of
// seed 001 over a gold file and a trace file, and, with a baseline trace
// file, the deltas and the canary analysis of SPEC §5.2 that let CI gate an
// index or chunking change.
//
// It runs the live path's own code, so that its numbers are the ones a
// running sidecar shows for the same events: lines are decoded by the
// wire package's live decoder, scored by sidecar/checks, deduplicated on
// event_id as the sidecar does, aggregated by a window.Windows (one window
// that holds every event) and judged by the sidecar/analysis engine with
// the configured check set. Only ΔS quantiles differ on purpose: offline
// they are exact (every value kept), live they come from a sketch within
// 1 %.
//
// A file is streamed: lines are decoded and scored on every core in
// blocks, and what is kept grows with the gold set (per-qid λ groups and
// flags) and the distinct event ids, not with the lines, except the ΔS
// values that exact quantiles need.
package eval

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// How ΔS quantiles are computed (Options.Quantiles, Report.Quantiles).
const (
	// QuantilesExact: linear-interpolated percentiles of every value, as
	// the offline commands report them (SPEC §4).
	QuantilesExact = "exact"
	// QuantilesSketch: the windows' sketch estimates, within 1 % of the
	// exact ones and equal to what a running sidecar shows; memory does
	// not grow with the ΔS values.
	QuantilesSketch = "sketch"
)

// The arms the analysis compares: the trace file is the candidate, the
// baseline file its baseline.
const (
	CandidateArm = "candidate"
	BaselineArm  = "baseline"
)

// BadDeltaS is the cited ΔS above which a qid is listed in bad_qids (seed
// 001: "ΔS > 0.60", the start of the risk zone).
const BadDeltaS = 0.60

// Options are the arguments of `shadoweval eval`.
type Options struct {
	Gold, Trace string
	// Baseline is the baseline trace file; "" for none.
	Baseline string
	// Ks are the cut-offs k; nil: Config.K. With a baseline, the cut-offs
	// the canary checks read (recall_at_5) are added.
	Ks []int
	// Config supplies citation_offset_tolerance, lambda.min_runs, limits
	// and the analysis section (alpha, check sets); nil: the defaults.
	Config *config.Config
	// Quantiles is QuantilesExact ("" too) or QuantilesSketch.
	Quantiles string
	// PerQuestion keeps each question's ranking metrics per file
	// (Report.PerQuestion); a baseline keeps them too, for the table's
	// largest regressions.
	PerQuestion bool
	// Progress, when set, is called from time to time, and once at the
	// end, with the bytes of the trace files read so far and their total.
	Progress func(done, total int64)
}

// The one window of the evaluation: every event is recorded at
// windowTime, so it holds them all and a snapshot reads them as one
// window of a running sidecar would.
const windowName = "all"

var windowTime = time.Unix(0, 0).UTC()

// Event times of the analysis. A line without ts comes syntheticStep
// after the line before it in its file (the first at syntheticStart), so
// files without ts interleave line by line, and a 10 s narrowing period of
// the analysis spans a thousand lines, as at 100 events a second live.
var syntheticStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

const syntheticStep = int64(10 * time.Millisecond)

// event is one decoded, scored line on its way from a file's decoders to
// the aggregation.
type event struct {
	obs   window.Observation
	line  int
	gold  int32  // index in the gold set; -1: the qid is not in it
	id    uint64 // hash of event_id
	hasID bool
	ts    int64 // ts, Unix ns
	hasTS bool
	t     int64 // event time: ts, else from the file order
	chunk *chunk
}

// batchSize is how many events travel together from a file to the
// aggregation: enough to amortise the hand-off.
const batchSize = 512

// Per-qid flags of one file, for bad_qids.
const (
	qScored   uint8 = 1 << iota // some event of the qid was scored
	qEligible                   // some run was coverage-eligible
	qCovered                    // some eligible run was covered
	qHighDS                     // some shipped run's cited ΔS > BadDeltaS
)

// file is one trace file and everything accumulated from it.
type file struct {
	arm, path string
	size      int64
	read      atomic.Int64
	writer    *window.Writer

	events, scored, unlabeled, duplicate int64
	withTS, withoutTS                    int64
	seen                                 map[uint64]struct{} // event_id hashes

	// Content types as the windows fold them (the first MaxTypes, the
	// rest in vocab.Other), so that exact ΔS values and bad_qids split as
	// the windows' snapshots do.
	types      window.TypeFold
	typeScored []int64
	cited, ret []values // exact ΔS values by type index
	qids       []uint8  // per gold item: q* flags
	// questions are its counts per gold question, for the paired
	// comparison with a baseline (nil without one).
	questions *questionCounts
	// ranks are its ranking metrics per gold question (nil unless
	// Options.PerQuestion or a baseline asks for them).
	ranks *questionRanks
}

// runner is one evaluation.
type runner struct {
	opt      Options
	cfg      *config.Config
	ks       []int
	exact    bool
	gold     *goldSet
	evalOpt  checks.Options
	maxTopK  int
	maxTypes int
	seed     maphash.Seed
	win      *window.Windows
	// checks and alpha are the canary check set and α a baseline is
	// judged with.
	checks   []config.AnalysisCheck
	alpha    float64
	files    []*file
	workers  sync.Pool // *worker
	chunks   sync.Pool // *chunk
	lastDraw time.Time
}

// worker is the scratch of one decoding goroutine: the decoder's lists,
// and the chunk its events are cut from.
type worker struct {
	sc wire.TraceScratch
	c  *chunk
}

// chunk holds events and the lists of their observations. A chunk goes
// back to the pool once the aggregation has taken all of its events, so
// a file is scored in a few warm chunks rather than in fresh memory for
// every line (first touches of new memory cost more than scoring), and
// events travel by pointer: the reader's per-block lists grow by a word a
// line.
type chunk struct {
	events [chunkEvents]event
	fl     [chunkEvents * 32]float64
	ne, nf int
	taken  int // events the aggregation is done with (its goroutine only)
}

const chunkEvents = 256

// event is a cleared event of w's chunk. The worker lets go of a chunk
// when it hands out its last event: from then on the chunk is the
// aggregation's to give back (only that event's lists are still cut from
// it, before the event leaves the worker).
func (r *runner) event(w *worker) (*event, *chunk) {
	c := w.c
	if c == nil {
		c = r.chunks.Get().(*chunk)
		c.ne, c.nf, c.taken = 0, 0, 0
		w.c = c
	}
	ev := &c.events[c.ne]
	if c.ne++; c.ne == chunkEvents {
		w.c = nil
	}
	*ev = event{chunk: c, gold: -1}
	return ev, c
}

// floats is an empty list of capacity n, from c when it has room.
func (c *chunk) floats(n int) []float64 {
	if c.nf+n > len(c.fl) {
		return make([]float64, 0, n)
	}
	s := c.fl[c.nf : c.nf : c.nf+n]
	c.nf += n
	return s
}

// done gives ev back: its chunk is reused once all of its events are.
func (r *runner) done(ev *event) {
	if c := ev.chunk; c != nil {
		if c.taken++; c.taken == chunkEvents {
			r.chunks.Put(c)
		}
	}
}

// Run evaluates opt.Trace (and opt.Baseline) against opt.Gold. Any error
// is bad input (or an unreadable file) and names the file, line and field.
func Run(opt Options) (*Report, error) {
	r, err := newRunner(opt)
	if err != nil {
		return nil, err
	}
	if err := r.run(); err != nil {
		return nil, err
	}
	return r.report(), nil
}

func newRunner(opt Options) (*runner, error) {
	cfg := opt.Config
	if cfg == nil {
		d := config.Default()
		cfg = &d
	}
	r := &runner{opt: opt, cfg: cfg, seed: maphash.MakeSeed(),
		maxTopK: cfg.Limits.MaxTopK, maxTypes: cfg.Limits.MaxContentTypes}
	switch opt.Quantiles {
	case "", QuantilesExact:
		r.exact = true
	case QuantilesSketch:
	default:
		return nil, fmt.Errorf("--quantiles %q: want %s or %s", opt.Quantiles, QuantilesExact, QuantilesSketch)
	}
	r.ks = slices.Clone(opt.Ks)
	if r.ks == nil {
		r.ks = slices.Clone(cfg.K)
	}
	checkSet := cfg.Analysis.Checks[config.CanaryCheckSet]
	if cfg.Analysis.Checks == nil {
		checkSet = config.DefaultCheckSets()[config.CanaryCheckSet]
	}
	if opt.Baseline != "" {
		// The analysis reads the observations the windows get, whose
		// per-k lists must hold every k its checks name.
		for _, c := range checkSet {
			if s, ok := window.Lookup(c.Metric); ok && s.Row.Over == window.PerK && !slices.Contains(r.ks, s.K) {
				r.ks = append(r.ks, s.K)
			}
		}
	}
	var err error
	r.win, err = window.New(window.Config{
		Windows:       []window.Spec{{Name: windowName, Length: time.Hour, Resolution: time.Hour}},
		Ks:            r.ks,
		LambdaMinRuns: cfg.Lambda.MinRuns,
		MaxArms:       2,
		MaxTypes:      r.maxTypes,
	})
	if err != nil {
		return nil, fmt.Errorf("--k %v: %w", r.ks, err)
	}
	r.ks = r.win.Ks()
	r.evalOpt = checks.Options{Ks: r.ks, Tolerance: int64(cfg.CitationOffsetTolerance)}
	r.workers.New = func() any { return new(worker) }
	r.chunks.New = func() any { return new(chunk) }

	paths := []string{opt.Trace}
	if opt.Baseline != "" {
		paths = append(paths, opt.Baseline)
	}
	for i, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("trace %w", err)
		}
		if fi.IsDir() {
			return nil, fmt.Errorf("trace %s: is a directory", p)
		}
		arm := CandidateArm
		if i == 1 {
			arm = BaselineArm
		}
		r.files = append(r.files, &file{arm: arm, path: p, size: fi.Size(), writer: r.win.NewWriter(),
			seen: map[uint64]struct{}{}})
	}
	if r.gold, err = loadGold(opt.Gold); err != nil {
		return nil, err
	}
	for _, f := range r.files {
		f.qids = make([]uint8, len(r.gold.items))
		if opt.PerQuestion || opt.Baseline != "" {
			f.ranks = newQuestionRanks(r.ks, len(r.gold.items))
		}
	}
	if opt.Baseline != "" {
		r.checks, r.alpha = checkSet, cfg.Analysis.Alpha
		if r.alpha <= 0 {
			r.alpha = config.DefaultAnalysisAlpha
		}
		for _, f := range r.files {
			f.questions = newQuestionCounts(r.ks, len(r.gold.items), cfg.Lambda.MinRuns)
		}
	}
	return r, nil
}

// errStopped ends a file's reading when the aggregation gave up.
var errStopped = errors.New("stopped")

// run reads every file to the end and aggregates its events, the files
// interleaved by event time (each in file order).
func (r *runner) run() error {
	n := len(r.files)
	done := make(chan struct{})
	chans := make([]chan []*event, n)
	errs := make([]error, n)
	free := make(chan []*event, 4*n+4)
	var wg sync.WaitGroup
	for i, f := range r.files {
		chans[i] = make(chan []*event, 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.produce(f, chans[i], free, done)
			close(chans[i])
		}()
	}
	stop := func(err error) error {
		close(done)
		wg.Wait()
		return err
	}
	// The head batch of each file, and the position in it.
	heads := make([][]*event, n)
	pos := make([]int, n)
	open := n
	next := func(i int) (bool, error) {
		if heads[i] != nil {
			select {
			case free <- heads[i][:0]:
			default:
			}
		}
		b, ok := <-chans[i]
		if !ok {
			heads[i] = nil
			open--
			return false, errs[i]
		}
		heads[i], pos[i] = b, 0
		r.progress(false)
		return true, nil
	}
	for i := range n {
		if _, err := next(i); err != nil {
			return stop(err)
		}
	}
	for open > 0 {
		// The file whose next event is earliest; the candidate on ties.
		k := -1
		for i := range n {
			if heads[i] != nil && (k < 0 || heads[i][pos[i]].t < heads[k][pos[k]].t) {
				k = i
			}
		}
		ev := heads[k][pos[k]]
		if err := r.add(r.files[k], ev); err != nil {
			return stop(err)
		}
		r.done(ev)
		if pos[k]++; pos[k] == len(heads[k]) {
			if _, err := next(k); err != nil {
				return stop(err)
			}
		}
	}
	wg.Wait()
	r.progress(true)
	return nil
}

// progress reports the bytes read, at most ten times a second unless
// final.
func (r *runner) progress(final bool) {
	if r.opt.Progress == nil {
		return
	}
	now := time.Now()
	if !final && now.Sub(r.lastDraw) < 100*time.Millisecond {
		return
	}
	r.lastDraw = now
	var done, total int64
	for _, f := range r.files {
		done += f.read.Load()
		total += f.size
	}
	r.opt.Progress(min(done, total), total)
}

// countingReader counts the bytes read, for the progress bar.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// produce decodes and scores the lines of f on every core and sends them,
// in file order and in batches, to out.
func (r *runner) produce(f *file, out chan<- []*event, free chan []*event, done <-chan struct{}) error {
	fh, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("trace %w", err)
	}
	defer fh.Close()
	newBatch := func() []*event {
		select {
		case b := <-free:
			return b
		default:
			return make([]*event, 0, batchSize)
		}
	}
	send := func(b []*event) error {
		select {
		case out <- b:
			return nil
		case <-done:
			return errStopped
		}
	}
	batch := newBatch()
	prev := syntheticStart
	err = wire.ParallelLines(&countingReader{fh, &f.read}, f.path, r.decoder(f.arm), func(line int, ev *event) error {
		ev.line = line
		if ev.hasTS {
			ev.t = ev.ts
		} else {
			ev.t = prev + syntheticStep
		}
		prev = ev.t
		batch = append(batch, ev)
		if len(batch) == cap(batch) {
			if err := send(batch); err != nil {
				return err
			}
			batch = newBatch()
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = send(batch)
	}
	return err
}

// Event times are kept within what Unix nanoseconds hold.
var (
	minTime = time.Unix(0, math.MinInt64+1)
	maxTime = time.Unix(0, math.MaxInt64)
)

// decoder decodes one line of a file of arm and scores it against its
// gold item: what the sidecar does to a message on a trace subject. It
// runs on every core at once.
func (r *runner) decoder(arm string) func(line []byte) (*event, error) {
	nk := len(r.ks)
	return func(line []byte) (*event, error) {
		w := r.workers.Get().(*worker)
		defer r.workers.Put(w)
		// The line is the reader's block, valid while the line is
		// handled: the event's strings and lists may borrow it and w.
		e, err := wire.DecodeTraceReuse(line, &w.sc)
		if err != nil {
			return nil, err
		}
		if len(e.TopK) > r.maxTopK {
			return nil, &wire.FieldError{Field: "topk", Msg: fmt.Sprintf("%d ranked items, more than limits.max_topk (%d)", len(e.TopK), r.maxTopK)}
		}
		if len(e.RetrievedIDs) > r.maxTopK {
			return nil, &wire.FieldError{Field: "retrieved_ids", Msg: fmt.Sprintf("%d ranked items, more than limits.max_topk (%d)", len(e.RetrievedIDs), r.maxTopK)}
		}
		ev, c := r.event(w)
		if e.EventID != "" {
			ev.id, ev.hasID = maphash.String(r.seed, e.EventID), true
		}
		if !e.TS.IsZero() {
			ts := e.TS
			if ts.Before(minTime) {
				ts = minTime
			} else if ts.After(maxTime) {
				ts = maxTime
			}
			ev.ts, ev.hasTS = ts.UnixNano(), true
		}
		gi, ok := r.gold.index[e.QID]
		if !ok {
			return ev, nil
		}
		ev.gold = gi
		e.Arm = arm
		o := &ev.obs
		o.PrecisionAtK = c.floats(nk)
		o.RecallAtK = c.floats(nk)
		o.Means = c.floats(window.MeansLen(nk))
		o.DeltaSRetrieved = c.floats(max(len(e.DeltaS), len(e.TopK), len(e.RetrievedIDs)))
		// A trace line carries both halves: an absent answer_json is the
		// shipped empty answer, as on the sidecar's trace subject.
		if err := checks.Evaluate(&e, r.gold.items[gi], true, r.evalOpt, o); err != nil {
			return nil, err
		}
		return ev, nil
	}
}

// add aggregates one event of f, in the sidecar's order: a repeated
// event_id is a duplicate, a qid outside the gold is unlabeled, the rest
// is scored into the windows and the analysis.
func (r *runner) add(f *file, ev *event) error {
	f.events++
	if ev.hasTS {
		f.withTS++
	} else {
		f.withoutTS++
	}
	if ev.hasID {
		if _, dup := f.seen[ev.id]; dup {
			f.duplicate++
			return nil
		}
		f.seen[ev.id] = struct{}{}
	}
	if ev.gold < 0 {
		f.unlabeled++
		return nil
	}
	o := &ev.obs
	o.Time = windowTime
	if err := f.writer.Add(o, windowTime); err != nil {
		return &wire.LineError{File: f.path, Line: ev.line, Err: err}
	}
	f.scored++
	if f.questions != nil {
		f.questions.add(ev.gold, o)
	}
	if f.ranks != nil {
		f.ranks.add(ev.gold, o)
	}
	ti := f.typeIndex(o.Type, r.maxTypes)
	f.typeScored[ti]++
	cited := o.HasDeltaSCited && o.HasAnswer && o.Shipped // as the windows count it
	if r.exact {
		if cited {
			f.cited[ti].add([]float64{o.DeltaSCited})
		}
		f.ret[ti].add(o.DeltaSRetrieved)
	}
	fl := &f.qids[ev.gold]
	*fl |= qScored
	if o.CoverageEligible {
		*fl |= qEligible
		if o.Covered {
			*fl |= qCovered
		}
	}
	if cited && o.DeltaSCited > BadDeltaS {
		*fl |= qHighDS
	}
	return nil
}

// typeIndex is the index of content type name, folded as window.Windows
// folds an arm's types.
func (f *file) typeIndex(name string, maxTypes int) int {
	i, added, _ := f.types.Of(name, maxTypes)
	if added {
		f.typeScored = append(f.typeScored, 0)
		f.cited = append(f.cited, values{})
		f.ret = append(f.ret, values{})
	}
	return i
}

// foldedType is the type under which f reports gold type name.
func (f *file) foldedType(name string) string {
	if _, ok := f.types.Index[name]; ok {
		return name
	}
	return vocab.Other
}
