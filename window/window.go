package window

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shadoweval/shadoweval/vocab"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultLambdaMinRuns = 3
	DefaultMaxLateness   = time.Minute
	DefaultMaxArms       = 32
	DefaultMaxTypes      = 16
)

// DefaultKs are the default cut-offs of SPEC §3.
var DefaultKs = []int{1, 3, 5, 10}

// DefaultWindows are the default windows of SPEC §4.
var DefaultWindows = []Spec{
	{Name: "5m", Length: 5 * time.Minute, Resolution: 10 * time.Second},
	{Name: "1h", Length: time.Hour, Resolution: time.Minute},
}

// RelativeAccuracy of the ΔS sketches.
const RelativeAccuracy = 0.01

// MinDeltaS: ΔS values below it are counted as 0 (an absolute error of at
// most MinDeltaS), which bounds a sketch to about 1050 bins.
const MinDeltaS = 1e-9

// Spec is one sliding window: Length of event time in buckets of
// Resolution.
type Spec struct {
	Name       string // "" = derived from Length: "5m", "1h"
	Length     time.Duration
	Resolution time.Duration
}

// Config configures Windows. Zero fields take the defaults above.
type Config struct {
	Windows       []Spec
	Ks            []int // at most 32, positive, distinct
	LambdaMinRuns int
	MaxLateness   time.Duration
	// Cardinality caps: the first MaxArms arms (MaxTypes content types of an
	// arm) are kept; later ones are folded into vocab.Other and counted.
	MaxArms, MaxTypes int
}

// Windows keeps the sliding windows of every arm. Safe for concurrent use.
type Windows struct {
	specs    []Spec
	ks       []int
	minRuns  int
	maxLate  int64 // ns
	maxArms  int
	maxTypes int
	layout   layout
	allRings uint64 // the mask of every ring
	stageRes int64  // ns: a Writer's staged bucket, the GCD of the resolutions

	mu          sync.Mutex // serialises arm creation
	arms        atomic.Pointer[armTable]
	foldedArms  atomic.Uint64
	foldedTypes atomic.Uint64

	qidMu   sync.Mutex
	qidKeys map[string]uint32 // λ group keys of the qids of observations without QIDKey
}

// MaxQIDKey bounds Observation.QIDKey: the keys from it up are the ones
// the Windows give qids themselves.
const MaxQIDKey = 1 << 31

// lamKey is the λ group key of o: its QIDKey, or one the Windows keep for
// its QID (never released: a caller with unbounded qids numbers them).
func (w *Windows) lamKey(o *Observation) uint32 {
	if o.QIDKey != 0 || !inLambda(o) {
		return o.QIDKey
	}
	w.qidMu.Lock()
	defer w.qidMu.Unlock()
	k, ok := w.qidKeys[o.QID]
	if !ok {
		if w.qidKeys == nil {
			w.qidKeys = map[string]uint32{}
		}
		k = MaxQIDKey + uint32(len(w.qidKeys))
		w.qidKeys[o.QID] = k
	}
	return k
}

// armTable is replaced, never modified, so Add reads it without a lock.
type armTable struct {
	byName map[string]*arm
	names  []string // sorted
}

// arm holds the rings of one arm; mu guards everything in it but the
// watermark, which Writers read and move without it.
type arm struct {
	mu        sync.Mutex
	watermark atomic.Int64 // highest accepted event time, capped at now; ns; noWatermark before the first
	types     TypeFold
	rings     []ring
	ds        [dsScratch]int // sketch indexes of one observation
	cells     []*cell        // the cells one event goes to, len(rings) capacity
	stages    []*stage       // the Writers' staged cells of this arm
}

// noWatermark is the watermark of an arm that has recorded nothing.
const noWatermark = math.MinInt64

const dsScratch = 64

// ring is the circular buffer of buckets of one window.
type ring struct {
	res   int64 // ns
	n     int64 // buckets in the window
	slots []slot
}

// slot is one bucket: cells by type index.
type slot struct {
	epoch int64 // bucket number (time / res); math.MinInt64 when never used
	cells []*cell
}

// New validates cfg, applies defaults and returns empty Windows.
func New(cfg Config) (*Windows, error) {
	minRuns, err1 := orDefault("LambdaMinRuns", cfg.LambdaMinRuns, DefaultLambdaMinRuns)
	maxLate, err2 := orDefault("MaxLateness", cfg.MaxLateness, DefaultMaxLateness)
	maxArms, err3 := orDefault("MaxArms", cfg.MaxArms, DefaultMaxArms)
	maxTypes, err4 := orDefault("MaxTypes", cfg.MaxTypes, DefaultMaxTypes)
	if err := cmp.Or(err1, err2, err3, err4); err != nil {
		return nil, err
	}
	w := &Windows{
		specs:    slices.Clone(cfg.Windows),
		ks:       slices.Clone(cfg.Ks),
		minRuns:  minRuns,
		maxLate:  int64(maxLate),
		maxArms:  maxArms,
		maxTypes: maxTypes,
	}
	if len(w.specs) == 0 {
		w.specs = slices.Clone(DefaultWindows)
	}
	if w.ks == nil {
		w.ks = slices.Clone(DefaultKs)
	}
	if len(w.specs) > 64 {
		return nil, fmt.Errorf("window: %d windows, want at most 64", len(w.specs))
	}
	if len(w.ks) == 0 || len(w.ks) > 32 {
		return nil, fmt.Errorf("window: %d cut-offs k, want 1 to 32", len(w.ks))
	}
	for i, k := range w.ks {
		if k <= 0 {
			return nil, fmt.Errorf("window: cut-off k=%d, want > 0", k)
		}
		if slices.Contains(w.ks[:i], k) {
			return nil, fmt.Errorf("window: cut-off k=%d given twice", k)
		}
	}
	for i := range w.specs {
		s := &w.specs[i]
		if s.Length <= 0 || s.Resolution <= 0 {
			return nil, fmt.Errorf("window %d: length %v and resolution %v must be > 0", i, s.Length, s.Resolution)
		}
		if s.Length%s.Resolution != 0 {
			return nil, fmt.Errorf("window %d: length %v is not a multiple of resolution %v", i, s.Length, s.Resolution)
		}
		if n := s.Length / s.Resolution; n > 1<<16 {
			return nil, fmt.Errorf("window %d: %d buckets, want at most 65536", i, n)
		}
		if s.Name == "" {
			s.Name = DurationName(s.Length)
		}
		for _, o := range w.specs[:i] {
			if o.Name == s.Name {
				return nil, fmt.Errorf("window %q given twice", s.Name)
			}
		}
	}
	w.layout = newLayout(len(w.ks))
	w.allRings = 1<<len(w.specs) - 1
	for _, s := range w.specs {
		w.stageRes = gcd(w.stageRes, int64(s.Resolution))
	}
	w.arms.Store(&armTable{byName: map[string]*arm{}})
	return w, nil
}

// DurationName is the short name of a window length: "5m", "1h", "90s".
func DurationName(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// Specs returns the windows in force (defaults applied).
func (w *Windows) Specs() []Spec { return slices.Clone(w.specs) }

// Ks returns the cut-offs in force.
func (w *Windows) Ks() []int { return slices.Clone(w.ks) }

// newArm allocates the rings of an arm. A ring holds the window's buckets,
// the future buckets MaxLateness may reach, and two spare ones so that a
// caller whose now lags another's by a bucket still finds its window intact.
func (w *Windows) newArm() *arm {
	a := &arm{}
	a.watermark.Store(noWatermark)
	a.rings = make([]ring, len(w.specs))
	a.cells = make([]*cell, 0, len(w.specs))
	for i, s := range w.specs {
		res := int64(s.Resolution)
		n := int64(s.Length / s.Resolution)
		size := n + (w.maxLate+res-1)/res + 2
		r := &a.rings[i]
		r.res, r.n = res, n
		r.slots = make([]slot, size)
		for j := range r.slots {
			r.slots[j].epoch = math.MinInt64
		}
	}
	return a
}

// getArm returns the arm called name, creating it or folding it into vocab.Other.
func (w *Windows) getArm(name string) *arm {
	if name == "" {
		name = DefaultArm
	}
	if a, ok := w.arms.Load().byName[name]; ok {
		return a
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.arms.Load()
	if a, ok := t.byName[name]; ok {
		return a
	}
	if len(t.byName) >= w.maxArms && name != vocab.Other {
		w.foldedArms.Add(1)
		if a, ok := t.byName[vocab.Other]; ok {
			return a
		}
		name = vocab.Other
	}
	nt := &armTable{byName: make(map[string]*arm, len(t.byName)+1)}
	for k, v := range t.byName {
		nt.byName[k] = v
	}
	a := w.newArm()
	nt.byName[name] = a
	nt.names = append(slices.Clone(t.names), name)
	slices.Sort(nt.names)
	w.arms.Store(nt)
	return a
}

// orDefault is v, or def when v is 0; a negative v is an error that names
// the Config field.
func orDefault[T ~int | ~int64](field string, v, def T) (T, error) {
	switch {
	case v < 0:
		return 0, fmt.Errorf("window: %s %v < 0", field, v)
	case v == 0:
		return def, nil
	}
	return v, nil
}

// lookupArm returns an existing arm; "" is DefaultArm.
func (w *Windows) lookupArm(name string) (*arm, bool) {
	if name == "" {
		name = DefaultArm
	}
	a, ok := w.arms.Load().byName[name]
	return a, ok
}

// typeIndex returns the index of content type name in a, creating it or
// folding it into vocab.Other. a.mu is held.
func (w *Windows) typeIndex(a *arm, name string) int {
	i, _, folded := a.types.Of(name, w.maxTypes)
	if folded {
		w.foldedTypes.Add(1)
	}
	return i
}

// TypeFold numbers content types as the windows do for an arm: in order
// of first appearance, the first max kept and later ones folded into
// vocab.Other, which does not count against max.
type TypeFold struct {
	Index map[string]int
	Names []string
}

// Of is the index of content type name ("" is vocab.DefaultType). added
// says that a name (name, or vocab.Other for a folded one) was numbered
// now, folded that name was folded into vocab.Other.
func (f *TypeFold) Of(name string, max int) (i int, added, folded bool) {
	if name == "" {
		name = vocab.DefaultType
	}
	if i, ok := f.Index[name]; ok {
		return i, false, false
	}
	n := len(f.Names)
	if _, ok := f.Index[vocab.Other]; ok {
		n-- // vocab.Other does not count against the cap
	}
	if n >= max && name != vocab.Other {
		folded = true
		if i, ok := f.Index[vocab.Other]; ok {
			return i, false, true
		}
		name = vocab.Other
	}
	if f.Index == nil {
		f.Index = map[string]int{}
	}
	i = len(f.Names)
	f.Index[name] = i
	f.Names = append(f.Names, name)
	return i, true, folded
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// floorDiv is ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// accept decides which rings take an event at t (ns) seen at now (ns): a
// bit per ring whose window at now, or a later one, holds t's bucket.
func (w *Windows) accept(t, now int64) (mask uint64, err error) {
	if t > now && t-now > w.maxLate {
		return 0, ErrFuture
	}
	for i, s := range w.specs {
		res := int64(s.Resolution)
		if floorDiv(t, res) > floorDiv(now, res)-int64(s.Length/s.Resolution) {
			mask |= 1 << i
		}
	}
	if mask == 0 {
		return 0, ErrLate
	}
	return mask, nil
}

// admit applies the watermark rule: an event more than MaxLateness behind
// the highest accepted event time is late.
func (w *Windows) admit(a *arm, t int64) bool {
	wm := a.watermark.Load()
	return wm == noWatermark || t >= wm || wm-t <= w.maxLate
}

// advance moves the watermark after an event was recorded; event times
// ahead of now count as now, so one skewed producer cannot make everybody
// else late.
func (a *arm) advance(t, now int64) {
	t = min(t, now)
	for {
		wm := a.watermark.Load()
		if t <= wm || a.watermark.CompareAndSwap(wm, t) {
			return
		}
	}
}

// cellFor returns the cell of type ti in the bucket of t of ring r, rotating
// the slot if it holds an older bucket; nil when it holds a newer one.
func (w *Windows) cellFor(r *ring, t int64, ti int) *cell {
	b := floorDiv(t, r.res)
	s := &r.slots[int(b-floorDiv(b, int64(len(r.slots)))*int64(len(r.slots)))]
	if s.epoch != b {
		if s.epoch > b {
			return nil
		}
		for _, c := range s.cells {
			if c != nil {
				c.reset()
			}
		}
		s.epoch = b
	}
	return cellAt(&s.cells, ti, &w.layout)
}

// cellAt returns (*cells)[ti], growing the list and allocating the cell
// when needed.
func cellAt(cells *[]*cell, ti int, l *layout) *cell {
	for ti >= len(*cells) {
		*cells = append(*cells, nil)
	}
	c := (*cells)[ti]
	if c == nil {
		c = newCell(l)
		(*cells)[ti] = c
	}
	return c
}

func eventTime(t, now time.Time) int64 {
	if t.IsZero() {
		return now.UnixNano()
	}
	return t.UnixNano()
}

// Add records one observation. It returns ErrLate or ErrFuture when the
// event is dropped by the lateness rules, an error wrapping ErrInvalid when
// o breaks its contract, and nil when o was recorded.
func (w *Windows) Add(o *Observation, now time.Time) error {
	t, nowNS, mask, err := w.admissible(o, now)
	if err != nil {
		return err
	}
	return w.add(w.getArm(o.Arm), o, t, nowNS, mask)
}

// admissible checks o and says at what time t (ns) which rings take it.
func (w *Windows) admissible(o *Observation, now time.Time) (t, nowNS int64, mask uint64, err error) {
	if err := validate(o, len(w.ks)); err != nil {
		return 0, 0, 0, err
	}
	nowNS = now.UnixNano()
	t = eventTime(o.Time, now)
	mask, err = w.accept(t, nowNS)
	return t, nowNS, mask, err
}

// add records o, whose time is t (ns), in the rings of mask of a, under a.mu.
func (w *Windows) add(a *arm, o *Observation, t, nowNS int64, mask uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	cells := w.cellsAt(a, mask, t, o.Type)
	if len(cells) == 0 {
		return ErrLate
	}
	idx := a.sketchIndexes(w, o)
	key := w.lamKey(o)
	for _, c := range cells {
		c.add(&w.layout, o, idx, key)
	}
	a.advance(t, nowNS)
	return nil
}

// AddPair records one judgement pair; an unknown label is an error wrapping
// ErrInvalid (the seed's scorer skips such rows: they never count in n).
func (w *Windows) AddPair(p *PairObservation, now time.Time) error {
	s, au := labelIndex(p.Scholar), labelIndex(p.Auditor)
	if s < 0 || au < 0 {
		return invalidf("judgement labels %q/%q: want one of %v", p.Scholar, p.Auditor, JudgementLabels)
	}
	nowNS := now.UnixNano()
	t := eventTime(p.Time, now)
	mask, err := w.accept(t, nowNS)
	if err != nil {
		return err
	}
	a := w.getArm(p.Arm)
	a.mu.Lock()
	defer a.mu.Unlock()
	cells := w.cellsAt(a, mask, t, p.Type)
	if len(cells) == 0 {
		return ErrLate
	}
	for _, c := range cells {
		c.cnt[cPairs+s*nLabels+au]++
	}
	a.advance(t, nowNS)
	return nil
}

// cellsAt is the cells that take an event of type typ at t (ns) in the
// rings of mask of a, under a.mu: none when the watermark rule makes it
// late or every ring has moved past its bucket. The list is a's scratch,
// good until the next call.
func (w *Windows) cellsAt(a *arm, mask uint64, t int64, typ string) []*cell {
	if !w.admit(a, t) {
		return nil
	}
	ti := w.typeIndex(a, typ)
	cells := a.cells[:0]
	for i := range a.rings {
		if mask&(1<<i) == 0 {
			continue
		}
		if c := w.cellFor(&a.rings[i], t, ti); c != nil {
			cells = append(cells, c)
		}
	}
	return cells
}

// sketchIndexes maps the ΔS values of o to sketch indexes once for all
// rings: idx[0] is ΔS cited (when counted), then the retrieved ones. An
// index of zeroIndex means the value counts as 0. nil when there are more
// values than the scratch space (the cells then map them themselves).
func (a *arm) sketchIndexes(w *Windows, o *Observation) []int {
	if len(o.DeltaSRetrieved)+1 > len(a.ds) {
		return nil
	}
	idx := a.ds[:len(o.DeltaSRetrieved)+1]
	if citedCounted(o) {
		idx[0] = mapIndex(o.DeltaSCited)
	}
	for i, v := range o.DeltaSRetrieved {
		idx[i+1] = mapIndex(v)
	}
	return idx
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// Arms lists the arms seen, sorted (vocab.Other included when something was
// folded into it).
func (w *Windows) Arms() []string {
	return slices.Clone(w.arms.Load().names)
}

// Types lists the content types seen in arm, sorted.
func (w *Windows) Types(arm string) []string {
	a, ok := w.lookupArm(arm)
	if !ok {
		return nil
	}
	a.mu.Lock()
	names := slices.Clone(a.types.Names)
	a.mu.Unlock()
	slices.Sort(names)
	return names
}

// Stats describes the memory held and what was folded.
type Stats struct {
	Arms          int
	Buckets       int    // slots over all rings and arms (fixed per arm)
	Cells         int    // allocated (bucket, type) cells
	LambdaEntries int    // λ summaries held: distinct qids per bucket and type
	FoldedArms    uint64 // events folded into arm vocab.Other
	FoldedTypes   uint64 // events folded into type vocab.Other
}

// Stats returns the current Stats.
func (w *Windows) Stats() Stats {
	st := Stats{FoldedArms: w.foldedArms.Load(), FoldedTypes: w.foldedTypes.Load()}
	for _, a := range w.arms.Load().byName {
		st.Arms++
		w.flushArm(a)
		a.mu.Lock()
		for i := range a.rings {
			r := &a.rings[i]
			st.Buckets += len(r.slots)
			for j := range r.slots {
				for _, c := range r.slots[j].cells {
					if c != nil {
						st.Cells++
						st.LambdaEntries += len(c.lam)
					}
				}
			}
		}
		a.mu.Unlock()
	}
	return st
}

// Writer records observations for one ingest goroutine. It stages the
// observations of the newest bucket in cells of its own, and merges them
// into the shared rings when it moves on to the next bucket or when
// anything reads the windows. So an observation costs one cell update under
// a lock nobody else takes (rather than one per window under the arm's
// lock, which the ingest goroutines would fight over), and reads see every
// observation whose Add has returned. The numbers are the same as Add's:
// everything in a cell merges exactly.
//
// A Writer is safe for concurrent use, but is fastest when one goroutine
// owns it.
type Writer struct {
	w      *Windows
	mu     sync.Mutex // serialises stage creation
	stages atomic.Pointer[map[*arm]*stage]
}

// stage is a Writer's staged bucket of one arm.
type stage struct {
	mu    sync.Mutex
	a     *arm
	epoch int64           // staged bucket: time / Windows.stageRes
	n     int64           // observations staged
	cells []*cell         // by type index; nil until used
	types map[string]int  // content type → type index (folding counted per event)
	fold  map[string]bool // types folded into vocab.Other
}

// NewWriter returns a Writer adding to w.
func (w *Windows) NewWriter() *Writer {
	wr := &Writer{w: w}
	wr.stages.Store(&map[*arm]*stage{})
	return wr
}

// Add records one observation, with the results of Windows.Add. An
// observation every window accepts and that is not older than the bucket
// staged goes to the stage; any other takes Windows.Add's path.
func (wr *Writer) Add(o *Observation, now time.Time) error {
	w := wr.w
	t, nowNS, mask, err := w.admissible(o, now)
	if err != nil {
		return err
	}
	a := w.getArm(o.Arm)
	if mask != w.allRings {
		return w.add(a, o, t, nowNS, mask)
	}
	st := wr.stage(a)
	key := w.lamKey(o)
	b := floorDiv(t, w.stageRes)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.n > 0 && b != st.epoch {
		if b < st.epoch {
			return w.add(a, o, t, nowNS, mask)
		}
		w.flush(st)
	}
	if !w.admit(a, t) {
		return ErrLate
	}
	st.epoch = b
	cellAt(&st.cells, st.typeIndex(w, o.Type), &w.layout).add(&w.layout, o, nil, key)
	st.n++
	a.advance(t, nowNS)
	return nil
}

// stage returns wr's stage of a, creating and registering it on first use.
func (wr *Writer) stage(a *arm) *stage {
	if st, ok := (*wr.stages.Load())[a]; ok {
		return st
	}
	wr.mu.Lock()
	defer wr.mu.Unlock()
	m := *wr.stages.Load()
	if st, ok := m[a]; ok {
		return st
	}
	st := &stage{a: a, types: map[string]int{}, fold: map[string]bool{}}
	a.mu.Lock()
	a.stages = append(a.stages, st)
	a.mu.Unlock()
	nm := maps.Clone(m)
	nm[a] = st
	wr.stages.Store(&nm)
	return st
}

// typeIndex is Windows.typeIndex with the answers kept. A name folded
// into vocab.Other stays folded (types are never dropped), and each event of it
// is counted as folded, as there.
func (st *stage) typeIndex(w *Windows, name string) int {
	if i, ok := st.types[name]; ok {
		if st.fold[name] {
			w.foldedTypes.Add(1)
		}
		return i
	}
	key := name
	if key == "" {
		key = vocab.DefaultType
	}
	st.a.mu.Lock()
	i := w.typeIndex(st.a, name)
	_, kept := st.a.types.Index[key]
	st.a.mu.Unlock()
	st.types[name] = i
	if !kept {
		st.fold[name] = true
	}
	return i
}

// flush merges st into its arm's rings and empties it. st.mu is held.
// A ring whose slot has moved past the staged bucket no longer holds it
// in its window, so the bucket is not added there.
func (w *Windows) flush(st *stage) {
	if st.n == 0 {
		return
	}
	a := st.a
	t := st.epoch * w.stageRes
	a.mu.Lock()
	for ti, sc := range st.cells {
		if sc == nil || sc.empty() {
			continue
		}
		for i := range a.rings {
			if c := w.cellFor(&a.rings[i], t, ti); c != nil {
				c.merge(sc, true, true)
			}
		}
		sc.reset()
	}
	a.mu.Unlock()
	st.n = 0
}

// flushArm merges every Writer's stage of a into a's rings, so that a read
// that follows sees every observation added before it. a.mu is not held.
func (w *Windows) flushArm(a *arm) {
	a.mu.Lock()
	stages := a.stages
	a.mu.Unlock()
	for _, st := range stages {
		st.mu.Lock()
		w.flush(st)
		st.mu.Unlock()
	}
}
