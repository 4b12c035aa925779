// Package gen makes deterministic, seeded test data for shadoweval: gold
// items (SPEC §2.1) and trace events (SPEC §2.2) in the shapes of the seed
// 002 gold.jsonl and runs/trace.jsonl, with a configurable share of awkward
// but valid content (the corner cases of the reference scorer: missing and
// empty lists, Unicode case mapping, refusal spellings, duplicates, orphans,
// blank lines, CRLF, escapes, ...).
//
// WriteGold and WriteTraces stream: memory does not grow with Items, and
// the same Options always give byte-identical output. Every item i is
// generated from its own PCG stream seeded by (Seed, i), so WriteTraces
// re-derives the gold item of each trace instead of remembering it.
// NewTraceSource makes single live events for the same gold set.
package gen

import (
	"math/rand/v2"
	"time"

	"github.com/shadoweval/shadoweval/vocab"
)

// Options configures the generators. Zero values mean the documented
// defaults; for the float knobs a negative value means 0.
type Options struct {
	// Seed selects the data set; the same Seed and Items give the same
	// gold items in WriteGold, WriteTraces and NewTraceSource.
	Seed uint64
	// Items is the number of gold items. WriteGold and WriteTraces write
	// exactly this many items (0: empty output); a TraceSource draws qids
	// from the first Items items (<= 0: 1000).
	Items int
	// Awkward is the share of items that get awkward content: each such
	// gold row / item's traces gets one awkward category (sometimes two),
	// see GoldCategories and TraceCategories. 0: 0.2 for files, 0.05 for a
	// TraceSource. Values above 1 count as 1.
	Awkward float64
	// Quality is the probability that a trace does the right thing: an
	// answerable item is answered with a claim holding a gold substring,
	// cites a gold id it retrieved in its top 5, and an unanswerable one is
	// refused. Awkward content may still spoil a right answer. In a
	// TraceSource it is per λ group, and an unanswerable item is refused
	// with probability 1 − (1 − Quality)². 0: 0.9.
	Quality float64
	// Answerable is the share of gold items with answerable=true. 0: 0.8.
	Answerable float64
	// Offsets is the share of gold items with citations that carry
	// relevant_offsets (which citation_accuracy reads). 0: 0.3.
	Offsets float64
	// Rich is the share of file traces that carry the live-path fields
	// delta_s and lambda_state (a quarter of those also topk, with the
	// same ids as retrieved_ids). 0: 0.08. A TraceSource always sends them.
	Rich float64
	// Arms labels traces. Files carry an "arm" field only when Arms is
	// set; a TraceSource defaults to vocab.DefaultArm.
	Arms []string
	// InOrder writes file traces in gold order; otherwise they are shuffled
	// within windows of 128 items and some duplicates arrive one window
	// later.
	InOrder bool
	// Now, when set, stamps TraceSource events with ts = Now(). Without it
	// events carry no ts (and output stays reproducible).
	Now func() time.Time
	// Stats, when set, is filled in with what was written.
	Stats *Stats
}

// Stats reports what a writer generated. Counts add up over calls that share
// one Stats.
type Stats struct {
	// Items is the number of gold items planned, AwkwardItems how many of
	// them got at least one awkward category.
	Items        int
	AwkwardItems int
	// Records counts JSON lines, Lines all lines (blank ones included).
	Records int
	Lines   int
	// Categories counts items per awkward category.
	Categories map[string]int
}

func (s *Stats) add(cat string) {
	if s.Categories == nil {
		s.Categories = make(map[string]int)
	}
	s.Categories[cat]++
}

// resolved options
type options struct {
	seed       uint64
	items      int
	awkward    float64
	quality    float64
	answerable float64
	offsets    float64
	rich       float64
	arms       []string
	inOrder    bool
	now        func() time.Time
	stats      *Stats
}

func share(v, def float64) float64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	case v > 1:
		return 1
	}
	return v
}

func resolve(o Options, source bool) options {
	awk := 0.2
	if source {
		awk = 0.05
	}
	r := options{
		seed:       o.Seed,
		items:      o.Items,
		awkward:    share(o.Awkward, awk),
		quality:    share(o.Quality, 0.9),
		answerable: share(o.Answerable, 0.8),
		offsets:    share(o.Offsets, 0.3),
		rich:       share(o.Rich, 0.08),
		arms:       o.Arms,
		inOrder:    o.InOrder,
		now:        o.Now,
		stats:      o.Stats,
	}
	if r.items < 0 {
		r.items = 0
	}
	if source {
		if o.Items <= 0 {
			r.items = 1000
		}
		if len(r.arms) == 0 {
			r.arms = []string{vocab.DefaultArm}
		}
	}
	return r
}

// Streams of per-item randomness: each (seed, index, stream) triple is an
// independent PCG sequence.
const (
	sGold uint64 = iota + 1
	sGoldAwk
	sTracePlan
	sShuffle
	sOrphan
	sFile
	sSource
	sTrace = 64 // + variant
)

func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// rnd is a reseedable PCG-backed generator.
type rnd struct {
	pcg rand.PCG
	r   *rand.Rand
}

func newRnd() *rnd {
	x := &rnd{}
	x.r = rand.New(&x.pcg)
	return x
}

func (x *rnd) seed(seed, index, stream uint64) {
	a := mix(seed ^ mix(index))
	x.pcg.Seed(a, mix(a^mix(stream)))
}

func (x *rnd) intn(n int) int              { return x.r.IntN(n) }
func (x *rnd) chance(p float64) bool       { return p > 0 && x.r.Float64() < p }
func (x *rnd) between(lo, hi int) int      { return lo + x.r.IntN(hi-lo+1) }
func (x *rnd) unif(lo, hi float64) float64 { return lo + (hi-lo)*x.r.Float64() }

func pick[T any](x *rnd, list []T) T { return list[x.r.IntN(len(list))] }
