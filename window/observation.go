package window

import (
	"errors"
	"math"
	"slices"
	"time"

	"github.com/shadoweval/shadoweval/vocab"
)

// Errors returned by Add and AddPair. The caller counts them; nothing is
// recorded when one is returned.
var (
	// ErrLate: the event falls in no window at now, or it is more than
	// MaxLateness behind the arm's watermark.
	ErrLate = errors.New("window: event too late")
	// ErrFuture: the event is more than MaxLateness ahead of now.
	ErrFuture = errors.New("window: event too far in the future")
	// ErrInvalid: the observation breaks its contract (shape, NaN, range,
	// unknown judgement label). Errors wrap it.
	ErrInvalid = errors.New("window: invalid observation")
)

// LambdaRun is the mergeable form of one run for the λ group rule of
// checks.LambdaGroup.
type LambdaRun struct {
	State   LambdaState
	Refused bool   // the run's claim is the refusal token
	Cited   uint64 // CitedSetHash of the run's citations
}

// Observation is one scored event, as the sidecar computed it.
type Observation struct {
	Arm  string // "" = DefaultArm
	Type string // gold content type; "" = vocab.DefaultType
	QID  string // λ group key
	// QIDKey, when not 0, stands for QID in the λ groups: a caller that
	// numbers its qids (one key per qid for the life of the Windows, below
	// MaxQIDKey) spares each event the hashing of its qid, and the windows
	// then hold no strings for the collector to scan. 0: the Windows number
	// QID themselves.
	QIDKey uint32
	// RequestID is the user request the event answered: canary analyses
	// pair the arms' events of one request (SPEC §5.3). "" = none.
	RequestID string
	Time      time.Time // event time; zero = now

	HasAnswer  bool // answer side present (false for a retrieval-only half)
	Answerable bool // gold A (false = U)
	Shipped    bool // not a refusal
	Contained  bool // C
	Hit        bool // H

	HasRetrieval bool
	RecallStrict uint32    // bit i set when G ⊆ R_k for Ks[i]
	PrecisionAtK []float64 // per Ks index; len(Ks) when HasRetrieval
	RecallAtK    []float64 // per Ks index; len(Ks) when HasRecallAtK
	HasRecallAtK bool      // G non-empty

	// HitAtK has bit i set when an id of G is among the first Ks[i]
	// distinct ids retrieved; counted with CountRanked in Counters.
	HitAtK uint32
	// Means holds the values of the sum blocks no field implies
	// (SumNDCGAtK on), MeansLen(len(Ks)) of them at MeanIndex, or none:
	// the check that computes them writes them here and sets their row's
	// denominator counter in Counters.
	Means []float64

	DeltaSRetrieved []float64 // ΔS of each top-k item
	HasDeltaSCited  bool
	DeltaSCited     float64

	CoverageEligible, Covered bool
	HasAnchorDistance         bool
	AnchorDistance            int

	Lambda LambdaRun // counted as a run when HasAnswer or State != LambdaNone
	Triage int       // index into TriageLabels, -1 = none (the zero value 0 is "ok")

	// Counters holds the per-event counters that no field above implies
	// (citation accuracy's, among others): the check that decides a
	// metric's counts sets them here, and its metric needs no field.
	Counters CounterSet
}

// PairObservation is one Scholar/Auditor judgement pair.
type PairObservation struct {
	Arm  string // "" = DefaultArm
	Type string // gold content type of the qid; "" = vocab.DefaultType
	// QID and RequestID are the question and request judged: canary
	// analyses pair the arms' judgements by them (SPEC §5.3).
	QID, RequestID string
	Time           time.Time // zero = now
	Scholar        string    // one of JudgementLabels
	Auditor        string
}

// CitedSetHash hashes the set of cited ids: FNV-1a 64 over the sorted
// distinct ids, each prefixed by its length. Order and duplicates do not
// matter; nil and empty give the same hash. It allocates only for more than
// 16 ids.
func CitedSetHash(ids []string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	add := func(h uint64, id string) uint64 {
		n := uint64(len(id))
		for j := 0; j < 8; j++ {
			h ^= n & 0xff
			h *= prime
			n >>= 8
		}
		for j := 0; j < len(id); j++ {
			h ^= uint64(id[j])
			h *= prime
		}
		return h
	}
	// Most answers cite one or two ids: no copy and no sort for those
	// (this runs for every event).
	switch len(ids) {
	case 0:
		return offset
	case 1:
		return add(offset, ids[0])
	case 2:
		a, b := ids[0], ids[1]
		if b < a {
			a, b = b, a
		}
		h := add(offset, a)
		if b != a {
			h = add(h, b)
		}
		return h
	}
	var buf [16]string
	s := append(buf[:0], ids...)
	slices.Sort(s)
	h := uint64(offset)
	for i, id := range s {
		if i > 0 && id == s[i-1] {
			continue
		}
		h = add(h, id)
	}
	return h
}

// validate checks o against the configured number of cut-offs.
func validate(o *Observation, nk int) error {
	if o.QIDKey >= MaxQIDKey {
		return invalidf("QIDKey %d: want below %d", o.QIDKey, MaxQIDKey)
	}
	if o.HasRetrieval && len(o.PrecisionAtK) != nk {
		return invalidf("PrecisionAtK has %d values, want %d", len(o.PrecisionAtK), nk)
	}
	if o.HasRecallAtK && len(o.RecallAtK) != nk {
		return invalidf("RecallAtK has %d values, want %d", len(o.RecallAtK), nk)
	}
	if o.HasRetrieval {
		for _, v := range o.PrecisionAtK {
			if !(v >= 0 && v <= 1) {
				return invalidf("PrecisionAtK value %v not in [0,1]", v)
			}
		}
	}
	if o.HasRecallAtK {
		for _, v := range o.RecallAtK {
			if !(v >= 0 && v <= 1) {
				return invalidf("RecallAtK value %v not in [0,1]", v)
			}
		}
	}
	switch set := o.eventCounters(); {
	case len(o.Means) == 0 && set&meanDens != 0:
		return invalidf("Means is empty, and the counters hold a denominator of its values")
	case len(o.Means) != 0 && len(o.Means) != MeansLen(nk):
		return invalidf("Means has %d values, want %d", len(o.Means), MeansLen(nk))
	}
	for _, v := range o.Means {
		if !(v >= 0 && v <= 1) {
			return invalidf("Means value %v not in [0,1]", v)
		}
	}
	for _, v := range o.DeltaSRetrieved {
		if math.IsNaN(v) {
			return invalidf("DeltaSRetrieved is NaN")
		}
	}
	if o.HasDeltaSCited && math.IsNaN(o.DeltaSCited) {
		return invalidf("DeltaSCited is NaN")
	}
	if o.HasAnchorDistance && o.AnchorDistance < 0 {
		return invalidf("AnchorDistance %d < 0", o.AnchorDistance)
	}
	if o.Triage < -1 || o.Triage >= len(TriageLabels) {
		return invalidf("Triage %d out of range", o.Triage)
	}
	if extra := o.Counters &^ checkCounters; extra != 0 {
		return invalidf("Counters %#x: counters the fields imply, or no counter", uint64(extra))
	}
	if int(o.Lambda.State) >= vocab.NumLambdaStates {
		return invalidf("Lambda.State %d out of range", o.Lambda.State)
	}
	return nil
}
