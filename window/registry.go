// Package window keeps sliding event-time windows of the quality metrics of
// SPEC §4 per arm and content type. It knows nothing of NATS or HTTP: the
// sidecar feeds it Observations and reads Snapshots.
package window

import (
	"iter"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/shadoweval/shadoweval/vocab"
)

// The metric registry: every window metric is a row of registry, and
// everything that lists metrics (snapshots, Prometheus, spans, config
// validation, the status page, the README glossary) reads it.

// Kind says what a metric's value is, which decides the threshold range a
// gate may use and how intervals and comparisons are computed.
type Kind int

const (
	// Proportion is numerator/denominator of counts, in [0,1]; Wilson and
	// Newcombe intervals apply.
	Proportion Kind = iota + 1
	// Mean is an average of per-event values in [0,1].
	Mean
	// Distance is an average tree distance, >= 0.
	Distance
	// Quantile is a ΔS quantile in [0,1]; arms are compared with
	// Mann-Whitney U.
	Quantile
	// Kappa is Cohen's κ, in [-1,1].
	Kappa
)

// String is the kind's word in the README glossary and in config errors.
func (k Kind) String() string {
	switch k {
	case Proportion:
		return "proportion"
	case Mean:
		return "mean"
	case Distance:
		return "distance"
	case Quantile:
		return "quantile"
	case Kappa:
		return "kappa"
	}
	return "unknown"
}

// Over says which metrics a registry row stands for.
type Over uint8

const (
	// Once: one metric, named Name.
	Once Over = iota
	// PerK: one metric per configured cut-off k, named Name+k
	// ("recall_at_5"). Adjacent PerK rows are listed k by k.
	PerK
	// PerTriageLabel: one metric per triage label, named Name+label
	// ("triage_ok"): the share of the observations with that label.
	PerTriageLabel
)

// Sketch names a ΔS distribution of the windows.
type Sketch uint8

const (
	CitedDeltaS     Sketch = iota + 1 // ΔS of the cited item of shipped answers
	RetrievedDeltaS                   // ΔS of every ranked item
)

// Unit is what one sample of a metric is (Value.Samples counts them).
type Unit uint8

const (
	Events       Unit = iota + 1 // scored observations
	DeltaSValues                 // ΔS values of a sketch
	LambdaGroups                 // complete λ groups
	Pairs                        // judgement pairs
)

// Counter is a count the windows keep. The per-event counters come first,
// in the order of a cell's counts (the order checkpoints store them in): an
// observation adds 1 to each counter of its set (Observation.eventCounters).
type Counter uint8

const (
	CountShipped             Counter = iota // answers shipped (S)
	CountShippedPrecise                     // S ∧ A ∧ C ∧ H
	CountShippedHit                         // S ∧ A ∧ H
	CountUnanswerable                       // answers whose gold item is not answerable (U)
	CountShippedUnanswerable                // S ∧ U
	CountAnswerable                         // answers whose gold item is answerable (A)
	CountRefusedAnswerable                  // refused (R) ∧ A
	CountRetrievedAnswerable                // retrievals of A: recall's denominator
	CountRetrieved                          // retrievals: P@k's denominator
	CountRecallAtK                          // retrievals with G non-empty: R@k's denominator
	CountCoverageEligible
	CountCovered
	CountAnchorDistance // observations with an anchor distance
	cAnchorSum          // Σ anchor distance: a total, in no set
	CountTriaged        // observations with a triage label

	// The counters below have no field of Observation to derive them
	// from: the check that decides them sets them in Observation.Counters.
	// A new per-event proportion adds its counters here, with their names
	// below, and its row.

	CountCitationAccEligible // answers whose gold item has relevant_offsets
	CountCitationAccurate    // of those, first citation within tolerance
	CountRanked              // retrievals with G non-empty, ranked: the ranking metrics' denominator

	numEventCounters
)

// eventCounterNames name the per-event counters in checkpoints, which
// store a cell's counts by name, so that a build with a counter more or
// less still restores them.
var eventCounterNames = [numEventCounters]string{
	CountShipped:             "shipped",
	CountShippedPrecise:      "shipped_precise",
	CountShippedHit:          "shipped_hit",
	CountUnanswerable:        "unanswerable",
	CountShippedUnanswerable: "shipped_unanswerable",
	CountAnswerable:          "answerable",
	CountRefusedAnswerable:   "refused_answerable",
	CountRetrievedAnswerable: "retrieved_answerable",
	CountRetrieved:           "retrieved",
	CountRecallAtK:           "recall_at_k_eligible",
	CountCoverageEligible:    "coverage_eligible",
	CountCovered:             "covered",
	CountCitationAccEligible: "citation_accuracy_eligible",
	CountCitationAccurate:    "citation_accurate",
	CountRanked:              "ranked",
	CountAnchorDistance:      "anchor_distance",
	cAnchorSum:               "anchor_distance_sum",
	CountTriaged:             "triaged",
}

// countNames names every count of a cell of layout l, for the cut-offs
// ks, in the cell's order.
func (l *layout) countNames(ks []int) []string {
	names := make([]string, l.nCnt)
	copy(names, eventCounterNames[:])
	for s := range nLabels {
		for a := range nLabels {
			names[cPairs+s*nLabels+a] = "pair_" + JudgementLabels[s] + "_" + JudgementLabels[a]
		}
	}
	for i, k := range ks {
		names[l.recall+i] = "recall_strict_at_" + strconv.Itoa(k)
	}
	for j, label := range TriageLabels {
		names[l.triage+j] = "triage_" + label
	}
	for i, k := range ks {
		names[l.hit+i] = "hit_at_" + strconv.Itoa(k)
	}
	if l.nVisit > 0 {
		for i, s := range PairedSeries(ks) {
			for j, stem := range visitSumNames {
				names[l.visits+visitSums*i+j] = stem + s.Name
			}
		}
		for j, stem := range visitSumNames {
			names[l.nCnt-visitSums+j] = stem + CitedVisitSeries
		}
	}
	return names
}

// fieldCounters are the counters the fields of Observation imply.
const fieldCounters = CountTriaged + 1

// A CounterSet has a bit for every per-event counter: past 64 this does
// not compile.
const _ = 64 - numEventCounters

// Counts a row names beyond the per-event counters: blocks of per-event
// counters, one per k or per triage label, and the λ group and judgement
// pair counts a snapshot works out.
const (
	cRecallStrict        Counter = 64 + iota // per k: retrievals of A with G ⊆ R_k
	cTriageLabel                             // per triage label: observations with it
	cHitAtK                                  // per k: ranked retrievals with an id of G in the first k distinct ids
	cLambdaComplete                          // complete λ groups
	cLambdaConvergent                        // convergent complete groups
	cLambdaFlips                             // flipping complete groups
	cPairsJudged                             // judgement pairs
	cPairsAgreeing                           // pairs whose two labels agree
	cPairsScholarAbstain                     // pairs whose Scholar label is ABSTAIN
)

// inCell says whether c is a count of a window cell (a per-event counter
// or a block of them), as opposed to one a snapshot works out.
func (c Counter) inCell() bool {
	return c < numEventCounters || c == cRecallStrict || c == cTriageLabel || c == cHitAtK
}

// SumBlock names the fixed-point sums of a cell that a Mean row owns: one
// per k for a PerK row, one for a Once row.
type SumBlock uint8

const (
	sumPrecisionAtK SumBlock = iota + 1 // Σ P@k over CountRetrieved
	sumRecallAtK                        // Σ R@k over CountRecallAtK

	// The blocks below have no field of Observation: the check that
	// computes their values writes them in Observation.Means (MeanIndex),
	// and they are summed over the events in their row's denominator. A
	// new mean adds its block here and its row.

	SumNDCGAtK    // Σ nDCG@k over CountRanked
	SumMAPAtK     // Σ AP@k over CountRanked
	SumRR         // Σ reciprocal rank over CountRanked
	SumRPrecision // Σ R-precision over CountRanked

	numSumBlocks
)

// firstMeanBlock is the first block Observation.Means holds.
const firstMeanBlock = SumNDCGAtK

// sumRows is the row that owns each block.
var sumRows = func() (rows [numSumBlocks]*Metric) {
	for i := range registry {
		if b := registry[i].sum; b != 0 {
			if rows[b] != nil {
				panic("window: sum block of two rows: " + registry[i].Name)
			}
			rows[b] = &registry[i]
		}
	}
	for b := sumPrecisionAtK; b < numSumBlocks; b++ {
		if rows[b] == nil {
			panic("window: sum block of no row")
		}
	}
	return rows
}()

// meanBlock is one block of Observation.Means: its row's denominator and
// whether it holds a value per k.
type meanBlock struct {
	den  Counter
	perK bool
}

var meanBlocks = func() (out []meanBlock) {
	for b := firstMeanBlock; b < numSumBlocks; b++ {
		out = append(out, meanBlock{den: sumRows[b].den, perK: sumRows[b].Over == PerK})
	}
	return out
}()

// meanDens are the denominators of the blocks of Observation.Means: an
// observation in one of them carries its values.
var meanDens = func() (s CounterSet) {
	for _, b := range meanBlocks {
		s.Set(b.den)
	}
	return s
}()

// MeansLen is the length of Observation.Means with nk cut-offs.
func MeansLen(nk int) int {
	n := 0
	for _, b := range meanBlocks {
		n += b.width(nk)
	}
	return n
}

func (b meanBlock) width(nk int) int {
	if b.perK {
		return nk
	}
	return 1
}

// MeanIndex is where block b's value at k index i (0 for a Once row) is
// in Observation.Means with nk cut-offs.
func MeanIndex(b SumBlock, i, nk int) int {
	at := 0
	for _, mb := range meanBlocks[:b-firstMeanBlock] {
		at += mb.width(nk)
	}
	return at + i
}

// CounterSet is a set of per-event counters, a bit each.
type CounterSet uint64

// Set adds c to s.
func (s *CounterSet) Set(c Counter) { *s |= 1 << c }

// Has says whether c is in s.
func (s CounterSet) Has(c Counter) bool { return s&(1<<c) != 0 }

// checkCounters are the counters Observation.Counters may hold.
const checkCounters = CounterSet(1<<numEventCounters - 1<<fieldCounters)

// Metric is one row of the registry.
type Metric struct {
	// Name is the metric's name; for a PerK or PerTriageLabel row, the
	// stem its k or label is appended to ("recall_at_", "triage_").
	Name          string
	Kind          Kind
	Over          Over
	LowerIsBetter bool

	// The metric's glossary text, from which the README's metric glossary
	// is generated: what it counts and over what. In a PerK row's text,
	// <k> stands for the k; a PerTriageLabel row has a definition per
	// label in LabelDefinitions instead of Definition.
	Definition       string
	Denominator      string
	LabelDefinitions map[string]string

	// How the value is computed, by Kind:
	//   - Proportion: num / den;
	//   - Mean: the sums of sum / den;
	//   - Distance: num (a total) / den;
	//   - Quantile: the q-quantile of sketch;
	//   - Kappa: Cohen's κ of the judgement pairs (den).
	// Of an expanded row, a block counter or sum is taken at the row's k or
	// label.
	num, den Counter
	sum      SumBlock
	sketch   Sketch
	q        float64
	// The value of a proportion with an empty denominator; emptyValid
	// false gives none.
	empty      float64
	emptyValid bool
	// lowerLabels are the labels of a PerTriageLabel row whose share is
	// better lower (they name a fault).
	lowerLabels []string
	// untraced: the spans carry a check event of their own for this
	// per-event proportion (refusal, citation_hit) instead of one named
	// after it.
	untraced bool
}

// registry is every window metric, in the order of SPEC §4 (the order of
// MetricNames). Adding a metric: a row here, with its glossary text (and,
// for a new per-event count, a Counter above), its per-event check in
// sidecar/checks, and that check's test; `go generate ./window` then
// refreshes the README's metric glossary from the rows.
var registry = [...]Metric{
	{Name: "precision", Kind: Proportion, num: CountShippedPrecise, den: CountShipped, empty: 1, emptyValid: true,
		Definition:  "shipped answers to answerable questions with C and H",
		Denominator: "shipped answers (empty: 1, as the reference scorer)"},
	{Name: "chr", Kind: Proportion, num: CountShippedHit, den: CountShipped, empty: 1, emptyValid: true, untraced: true,
		Definition:  "citation hit rate: shipped answers to answerable questions with H",
		Denominator: "shipped answers (empty: 1, as the reference scorer)"},
	{Name: "under_refusal", Kind: Proportion, LowerIsBetter: true, num: CountShippedUnanswerable, den: CountUnanswerable, emptyValid: true, untraced: true,
		Definition:  "answers to unanswerable questions that shipped instead of refusing",
		Denominator: "answers whose gold item is not answerable (empty: 0)"},
	{Name: "over_refusal", Kind: Proportion, LowerIsBetter: true, num: CountRefusedAnswerable, den: CountAnswerable, emptyValid: true, untraced: true,
		Definition:  "answers to answerable questions that refused",
		Denominator: "answers whose gold item is answerable (empty: 0)"},
	{Name: "recall_at_", Kind: Proportion, Over: PerK, num: cRecallStrict, den: CountRetrievedAnswerable, emptyValid: true,
		Definition:  "strict recall: scored events whose R_<k> holds all of G (true for empty G)",
		Denominator: "scored events whose gold item is answerable (empty: 0)"},
	{Name: "mean_precision_at_", Kind: Mean, Over: PerK, sum: sumPrecisionAtK, den: CountRetrieved,
		Definition:  "mean of P@<k>: the share of the ids in R_<k> that are in G (0 when nothing was retrieved)",
		Denominator: "scored events"},
	{Name: "mean_recall_at_", Kind: Mean, Over: PerK, sum: sumRecallAtK, den: CountRecallAtK,
		Definition:  "mean of R@<k>: the share of G found in R_<k>",
		Denominator: "scored events whose G is not empty"},
	{Name: "ndcg_at_", Kind: Mean, Over: PerK, sum: SumNDCGAtK, den: CountRanked,
		Definition:  "mean of nDCG@<k> with binary gains, as trec_eval's `ndcg_cut`: DCG = Σ 1/log2(i+1) over the ranks i ≤ <k> of the ranking that hold an id of G, over the DCG of min(|G|, <k>) such ids first (the ranking: the retrieved ids in order, each id at its first rank only; nothing retrieved: 0)",
		Denominator: "scored events whose G is not empty (trec_eval `-c` also counts a question with no relevant id, as 0)"},
	{Name: "map_at_", Kind: Mean, Over: PerK, sum: SumMAPAtK, den: CountRanked,
		Definition:  "mean average precision cut at <k>, as trec_eval's `map_cut`: Σ of the precision at each rank i ≤ <k> that holds an id of G, divided by |G| (not by min(|G|, <k>)); nothing retrieved: 0",
		Denominator: "scored events whose G is not empty (as nDCG)"},
	{Name: "hit_at_", Kind: Proportion, Over: PerK, num: cHitAtK, den: CountRanked,
		Definition:  "hit rate at <k> (success@k, trec_eval's `success`): scored events with an id of G in the first <k> ids of the ranking; nothing retrieved: a miss",
		Denominator: "scored events whose G is not empty (as nDCG)"},
	{Name: "mrr", Kind: Mean, sum: SumRR, den: CountRanked,
		Definition:  "mean reciprocal rank, as trec_eval's `recip_rank`: 1/i for the first rank i of the whole ranking (no cut-off) that holds an id of G, 0 when none does or nothing was retrieved",
		Denominator: "scored events whose G is not empty (as nDCG)"},
	{Name: "r_precision", Kind: Mean, sum: SumRPrecision, den: CountRanked,
		Definition:  "mean R-precision, as trec_eval's `Rprec`: the share of the first |G| ranks that hold an id of G, a short ranking's missing ranks counting as misses; nothing retrieved: 0",
		Denominator: "scored events whose G is not empty (as nDCG)"},
	{Name: "coverage", Kind: Proportion, num: CountCovered, den: CountCoverageEligible,
		Definition:  "answers that cite an id in G, or an item whose `section_id` is the gold `anchor_section` or lies under it (`S.4.2.1` is under `S.4.2`)",
		Denominator: "answers to answerable questions whose gold item has G or an `anchor_section`"},
	{Name: "citation_accuracy", Kind: Proportion, num: CountCitationAccurate, den: CountCitationAccEligible,
		Definition:  "answers whose first citation is in G with offsets (`citation_offsets`, else its `topk` item's) within `citation_offset_tolerance` bytes of the gold offsets at both ends",
		Denominator: "answers whose gold item has `relevant_offsets`"},
	{Name: "anchor_proximity", Kind: Distance, LowerIsBetter: true, num: cAnchorSum, den: CountAnchorDistance,
		Definition:  "mean tree distance between the first citation's `section_id` and the gold `anchor_section`: depth(a) + depth(b) − 2 · depth(common prefix)",
		Denominator: "answers whose first citation has a `topk` item with a `section_id` and whose gold item has an `anchor_section`"},
	{Name: "delta_s_median", Kind: Quantile, LowerIsBetter: true, sketch: CitedDeltaS, q: 0.5,
		Definition:  "median ΔS of the cited item: `delta_s_cited`, else the ΔS of the first citation's ranked item",
		Denominator: "shipped answers with a cited ΔS"},
	{Name: "delta_s_p90", Kind: Quantile, LowerIsBetter: true, sketch: CitedDeltaS, q: 0.9,
		Definition:  "90th percentile of the cited ΔS, as above",
		Denominator: "shipped answers with a cited ΔS"},
	{Name: "delta_s_retrieved_median", Kind: Quantile, LowerIsBetter: true, sketch: RetrievedDeltaS, q: 0.5,
		Definition:  "median ΔS of every ranked item (`delta_s`, else computed from `embeddings`)",
		Denominator: "ΔS values of the ranked items of scored events"},
	{Name: "delta_s_retrieved_p90", Kind: Quantile, LowerIsBetter: true, sketch: RetrievedDeltaS, q: 0.9,
		Definition:  "90th percentile of the ranked items' ΔS",
		Denominator: "ΔS values of the ranked items of scored events"},
	{Name: "lambda_convergence", Kind: Proportion, num: cLambdaConvergent, den: cLambdaComplete,
		Definition:  "complete λ groups that are convergent: every run that states a λ state says `→`, and when some run states none, all runs make the same refuse/ship decision and cite the same id set",
		Denominator: "complete λ groups: qids with at least `lambda.min_runs` answers in the arm and window"},
	{Name: "lambda_flip_rate", Kind: Proportion, LowerIsBetter: true, num: cLambdaFlips, den: cLambdaComplete,
		Definition:  "complete λ groups that flip: some run says `←`, or when some run states none, the runs disagree on refuse/ship",
		Denominator: "complete λ groups"},
	{Name: "agreement", Kind: Proportion, num: cPairsAgreeing, den: cPairsJudged,
		Definition:  "judgement pairs where Scholar and Auditor give the same label",
		Denominator: "judgement pairs"},
	{Name: "kappa", Kind: Kappa, den: cPairsJudged,
		Definition:  "Cohen's κ of the pairs' labels",
		Denominator: "judgement pairs"},
	{Name: "abstain_rate", Kind: Proportion, LowerIsBetter: true, num: cPairsScholarAbstain, den: cPairsJudged,
		Definition:  "judgement pairs whose Scholar label is `ABSTAIN`",
		Denominator: "judgement pairs"},
	{Name: "triage_", Kind: Proportion, Over: PerTriageLabel, num: cTriageLabel, den: CountTriaged,
		lowerLabels: []string{vocab.TriageRetrievalDrift, vocab.TriageGenerationDrift, vocab.TriageRefusalSuspect},
		LabelDefinitions: map[string]string{
			vocab.TriageOK:              "shipped answers that cite only retrieved ids and have a phrase of the claim in the evidence, which holds a query term",
			vocab.TriageRetrievalDrift:  "shipped answers whose evidence (the `topk` texts) holds none of the query's terms",
			vocab.TriageGenerationDrift: "shipped answers that cite nothing or an id not retrieved, or none of whose phrases is in evidence that holds query terms",
			vocab.TriageRefusalOK:       "refusals whose evidence holds none of the query's terms",
			vocab.TriageRefusalSuspect:  "refusals although the evidence holds query terms",
		},
		Denominator: "answers whose `topk` items carry `text`"},
}

// Registry returns the rows of the registry, in order.
func Registry() []Metric { return slices.Clone(registry[:]) }

// Pattern is the row's name with its expansion spelled out:
// "recall_at_<k>", "triage_<label>".
func (m Metric) Pattern() string {
	switch m.Over {
	case PerK:
		return m.Name + "<k>"
	case PerTriageLabel:
		return m.Name + "<label>"
	}
	return m.Name
}

// Unit is what one sample of the metric is.
func (m Metric) Unit() Unit {
	switch {
	case m.Kind == Quantile:
		return DeltaSValues
	case m.den == cLambdaComplete:
		return LambdaGroups
	case m.den == cPairsJudged:
		return Pairs
	}
	return Events
}

// Sketch is the ΔS distribution of a Quantile row, 0 for any other.
func (m Metric) Sketch() Sketch { return m.sketch }

// Q is the probability of a Quantile row's quantile, 0 for any other row.
func (m Metric) Q() float64 { return m.q }

// PerEvent says whether the metric is a proportion of per-event counters:
// one every observation counts in or not (EventCounts keeps them).
func (m Metric) PerEvent() bool {
	return m.Kind == Proportion && m.num.inCell() && m.den.inCell()
}

// RankingMetric says whether the metric is one of the ranking metrics
// (nDCG, AP, hit, reciprocal rank, R-precision): those over the ranked
// retrievals, CountRanked.
func (m Metric) RankingMetric() bool { return m.den == CountRanked }

// SumBlock is the block of sums a Mean row owns; false for any other row.
func (m Metric) SumBlock() (SumBlock, bool) { return m.sum, m.sum != 0 }

// Traced says whether a span carries an evaluation event named after this
// per-event proportion for each observation in its denominator.
func (m Metric) Traced() bool { return m.PerEvent() && !m.untraced }

// Series is one reported metric: a row of the registry at one k or label.
type Series struct {
	Name          string // as reported: "recall_at_5", "triage_ok"
	Kind          Kind
	LowerIsBetter bool
	Row           Metric
	K             int    // of a PerK row
	Label         string // of a PerTriageLabel row
	index         int    // of K in the cut-offs, or of Label in TriageLabels; -1 unknown
}

// KIndex is the index of a PerK series' k in the cut-offs it was expanded
// with (Expand), 0 for a Once series, -1 for one Lookup found.
func (s Series) KIndex() int { return s.index }

func (m *Metric) series(name string, index, k int, label string) Series {
	lower := m.LowerIsBetter
	if label != "" {
		lower = slices.Contains(m.lowerLabels, label)
	}
	return Series{Name: name, Kind: m.Kind, LowerIsBetter: lower, Row: *m, K: k, Label: label, index: index}
}

// allSeries yields every metric reported with the cut-offs ks, in the
// order of MetricNames.
func allSeries(ks []int) iter.Seq[Series] {
	return func(yield func(Series) bool) {
		for i := 0; i < len(registry); {
			m := &registry[i]
			switch m.Over {
			case PerK:
				j := i + 1
				for j < len(registry) && registry[j].Over == PerK {
					j++
				}
				for ki, k := range ks {
					s := strconv.Itoa(k)
					for r := i; r < j; r++ {
						if !yield(registry[r].series(registry[r].Name+s, ki, k, "")) {
							return
						}
					}
				}
				i = j
				continue
			case PerTriageLabel:
				for li, label := range TriageLabels {
					if !yield(m.series(m.Name+label, li, 0, label)) {
						return
					}
				}
			default:
				if !yield(m.series(m.Name, 0, 0, "")) {
					return
				}
			}
			i++
		}
	}
}

// Expand lists every metric reported with the cut-offs ks, in the order of
// MetricNames.
func Expand(ks []int) []Series { return slices.Collect(allSeries(ks)) }

// MetricNames lists every metric reported with the cut-offs ks, in a stable
// order: the registry's, the per-k ones k by k.
func MetricNames(ks []int) []string {
	var names []string
	for s := range allSeries(ks) {
		names = append(names, s.Name)
	}
	return names
}

// onceRows finds the Once rows by name.
var onceRows = func() map[string]int {
	m := map[string]int{}
	for i, r := range registry {
		if r.Over == Once {
			m[r.Name] = i
		}
	}
	return m
}()

// Lookup finds the metric a name stands for, at any k (positive, written
// as the windows write it).
func Lookup(name string) (Series, bool) {
	if i, ok := onceRows[name]; ok {
		return registry[i].series(name, 0, 0, ""), true
	}
	for i := range registry {
		m := &registry[i]
		rest, ok := strings.CutPrefix(name, m.Name)
		if !ok {
			continue
		}
		switch m.Over {
		case PerK:
			if k, err := strconv.Atoi(rest); err == nil && k > 0 && strconv.Itoa(k) == rest {
				return m.series(name, -1, k, ""), true
			}
		case PerTriageLabel:
			if j := vocab.TriageIndex(rest); j >= 0 {
				return m.series(name, j, 0, rest), true
			}
		}
	}
	return Series{}, false
}

// MetricKind tells whether name is a metric reported with the cut-offs ks,
// and its kind.
func MetricKind(name string, ks []int) (Kind, bool) {
	s, ok := Lookup(name)
	if !ok || s.Row.Over == PerK && !slices.Contains(ks, s.K) {
		return 0, false
	}
	return s.Kind, true
}

// KindOf is the kind of a metric name whatever k it carries (recall_at_7
// is a Proportion even where k lists no 7); 0 for a name that is no metric.
func KindOf(name string) Kind {
	s, _ := Lookup(name)
	return s.Kind
}

// LowerIsBetter tells whether a smaller value of the metric is the better
// one (refusal errors, ΔS, λ flips, abstentions, anchor distance, the
// triage labels that name a fault); false for a name that is no metric.
func LowerIsBetter(name string) bool {
	s, _ := Lookup(name)
	return s.LowerIsBetter
}

// eventCounters is the set of per-event counters o adds 1 to: those its fields
// imply, and o.Counters.
func (o *Observation) eventCounters() CounterSet {
	s := o.Counters
	if o.HasAnswer {
		if o.Answerable {
			s |= 1 << CountAnswerable
		} else {
			s |= 1 << CountUnanswerable
		}
		switch {
		case o.Shipped:
			s |= 1 << CountShipped
			if !o.Answerable {
				s |= 1 << CountShippedUnanswerable
			} else if o.Hit {
				s |= 1 << CountShippedHit
				if o.Contained {
					s |= 1 << CountShippedPrecise
				}
			}
		case o.Answerable:
			s |= 1 << CountRefusedAnswerable
		}
	}
	if o.HasRetrieval {
		s |= 1 << CountRetrieved
		if o.Answerable {
			s |= 1 << CountRetrievedAnswerable
		}
	}
	if o.HasRecallAtK {
		s |= 1 << CountRecallAtK
	}
	if o.CoverageEligible {
		s |= 1 << CountCoverageEligible
		if o.Covered {
			s |= 1 << CountCovered
		}
	}
	if o.HasAnchorDistance {
		s |= 1 << CountAnchorDistance
	}
	if o.Triage >= 0 {
		s |= 1 << CountTriaged
	}
	return s
}

// countEvent adds o to the counts cnt of layout l: 1 to each counter of its
// set, to the recall and hit counters of each k it recalls or hits and to
// its triage label's, and its anchor distance to the total. It returns
// the set.
func countEvent(cnt []int64, l *layout, o *Observation) CounterSet {
	set := o.eventCounters()
	for s := set; s != 0; s &= s - 1 {
		cnt[bits.TrailingZeros64(uint64(s))]++
	}
	if set.Has(CountRetrievedAnswerable) {
		rc := cnt[l.recall : l.recall+l.nk]
		for i := range rc {
			if o.RecallStrict&(1<<i) != 0 {
				rc[i]++
			}
		}
	}
	if o.Triage >= 0 {
		cnt[l.triage+o.Triage]++
	}
	if set.Has(CountRanked) {
		hc := cnt[l.hit : l.hit+l.nk]
		for i := range hc {
			if o.HitAtK&(1<<i) != 0 {
				hc[i]++
			}
		}
	}
	if o.HasAnchorDistance {
		cnt[cAnchorSum] += int64(o.AnchorDistance)
	}
	return set
}

// maxEventIncs bounds the counts countEvent adds 1 to for one observation.
const maxEventIncs = int(numEventCounters) + 2*32 + 1

// eventIncs writes into dst the indexes of the counts countEvent adds 1 to
// (the anchor total aside) and returns how many there are.
func eventIncs(dst []uint16, l *layout, o *Observation) int {
	n := 0
	set := o.eventCounters()
	for s := set; s != 0; s &= s - 1 {
		dst[n] = uint16(bits.TrailingZeros64(uint64(s)))
		n++
	}
	if set.Has(CountRetrievedAnswerable) {
		for i := range l.nk {
			if o.RecallStrict&(1<<i) != 0 {
				dst[n] = uint16(l.recall + i)
				n++
			}
		}
	}
	if o.Triage >= 0 {
		dst[n] = uint16(l.triage + o.Triage)
		n++
	}
	if set.Has(CountRanked) {
		for i := range l.nk {
			if o.HitAtK&(1<<i) != 0 {
				dst[n] = uint16(l.hit + i)
				n++
			}
		}
	}
	return n
}

// EventCounts are the per-event counters of a window cell over every
// observation added, with no windows: the numerators and denominators of
// the per-event proportions. Not safe for concurrent use.
type EventCounts struct {
	ks  []int
	l   layout
	cnt []int64
}

// NewEventCounts returns empty counts for the cut-offs ks.
func NewEventCounts(ks []int) *EventCounts {
	l := newLayout(len(ks))
	return &EventCounts{ks: slices.Clone(ks), l: l, cnt: make([]int64, l.nCnt)}
}

// Add counts o, an observation that Windows.Add accepted with the same
// cut-offs.
func (e *EventCounts) Add(o *Observation) { countEvent(e.cnt, &e.l, o) }

// Merge adds o, of the same cut-offs, into e.
func (e *EventCounts) Merge(o *EventCounts) {
	for i, v := range o.cnt {
		e.cnt[i] += v
	}
}

// EventProportion is a per-event proportion's numerator and denominator.
type EventProportion struct {
	Series
	Num, Den int64
}

// Value is the proportion's value, as the windows report it.
func (p EventProportion) Value() Value {
	return proportion(p.Num, p.Den, p.Row.empty, p.Row.emptyValid)
}

// Proportions yields every per-event proportion (Metric.PerEvent), in the
// order of MetricNames.
func (e *EventCounts) Proportions() iter.Seq[EventProportion] {
	return func(yield func(EventProportion) bool) {
		for s := range allSeries(e.ks) {
			if !s.Row.PerEvent() {
				continue
			}
			p := EventProportion{Series: s, Num: e.cnt[e.l.index(s.Row.num, s.index)], Den: e.cnt[e.l.index(s.Row.den, s.index)]}
			if !yield(p) {
				return
			}
		}
	}
}
