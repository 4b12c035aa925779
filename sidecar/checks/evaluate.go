package checks

import (
	"errors"
	"fmt"
	"slices"

	"github.com/shadoweval/shadoweval/internal/pycompat"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// Options are the settings of the per-event checks.
type Options struct {
	Ks        []int // cut-offs of recall@k, P@k and R@k
	Tolerance int64 // citation offset tolerance in bytes
}

// ErrBadEvent wraps the reasons an event that decoded cleanly still cannot
// be scored (an unknown λ state, embeddings of different lengths, …).
var ErrBadEvent = errors.New("bad event")

// Gold is a gold row with what the checks derive from it, derived once
// when the gold file is loaded rather than for every event.
type Gold struct {
	wire.Gold
	// Key stands for the qid in the windows' λ groups
	// (window.Observation.QIDKey); 0: the windows number the qid.
	Key         uint32
	claimSubstr substrSet // GoldClaimSubstr as Containment reads it
	citations   []string  // Gold.Citations(): the gold set G
}

// NewGold prepares g for Evaluate.
func NewGold(g wire.Gold) *Gold {
	return &Gold{Gold: g, claimSubstr: prepareSubstrs(g.GoldClaimSubstr), citations: g.Citations()}
}

// Evaluate runs every check of SPEC §3 on one event against its gold item
// and fills o, reusing its slices so that a caller that pools
// observations scores an event without allocating. hasAnswer is false for
// a retrieval half whose answer never came: only retrieval metrics are
// scored then. The live path reads the gold set G as gold_citations ∪
// relevant and the ranked ids of topk before retrieved_ids (SPEC §2); a
// trace without an answer is a shipped empty claim and one without ids
// retrieved nothing, as in the reference. The observation carries the
// event's arm and time and the gold item's qid, type and key.
func Evaluate(e *wire.TraceEvent, item *Gold, hasAnswer bool, opt Options, o *window.Observation) error {
	g := &item.Gold
	gold := item.citations
	ids := rankedIDs(e)
	*o = window.Observation{
		Arm: e.Arm, Type: g.Type, QID: g.QID, QIDKey: item.Key, RequestID: e.RequestID, Time: e.TS,
		Answerable:      g.Answerable,
		HasRetrieval:    true,
		PrecisionAtK:    o.PrecisionAtK[:0],
		RecallAtK:       o.RecallAtK[:0],
		Means:           o.Means[:0],
		DeltaSRetrieved: o.DeltaSRetrieved[:0],
		Triage:          -1,
	}
	if !retrievalAtKs(gold, ids, opt.Ks, o) {
		retrievalPerK(gold, ids, opt.Ks, o)
	}
	retrievedDS, err := retrievedDeltaS(e, ids, o.DeltaSRetrieved)
	if err != nil {
		return err
	}
	o.DeltaSRetrieved = retrievedDS
	if !hasAnswer {
		return nil
	}

	o.HasAnswer = true
	claim := pycompat.Strip(e.Answer.Claim)
	cits := Citations{IDs: e.Answer.Citations, NotList: e.Answer.CitationsNotList}
	asciiClaim := isASCII(claim)
	o.Shipped = !isStrippedRefusal(claim, asciiClaim)
	o.Contained = item.claimSubstr.contains(claim, asciiClaim)
	o.Hit = CitationHit(cits, gold, ids)
	cited := e.Answer.Citations // nil when not a list
	first := ""
	if len(cited) > 0 {
		first = cited[0]
	}

	if o.Shipped {
		if e.DeltaSCited != nil {
			o.HasDeltaSCited, o.DeltaSCited = true, *e.DeltaSCited
		} else if first != "" {
			ds, ok, err := itemDeltaS(e, ids, first)
			if err != nil {
				return err
			}
			o.HasDeltaSCited, o.DeltaSCited = ok, ds
		}
	}
	sectionOf := func(id string) (string, bool) {
		for i := range e.TopK {
			if e.TopK[i].ID == id && e.TopK[i].SectionID != "" {
				return e.TopK[i].SectionID, true
			}
		}
		return "", false
	}
	if g.Answerable && (len(gold) > 0 || g.AnchorSection != "") {
		o.CoverageEligible = true
		if len(gold) <= smallSet {
			// Covered without its set of gold ids.
			for _, id := range cited {
				if slices.Contains(gold, id) {
					o.Covered = true
					break
				}
				if sec, ok := sectionOf(id); ok && UnderSection(sec, g.AnchorSection) {
					o.Covered = true
					break
				}
			}
		} else {
			o.Covered = Covered(cited, gold, g.AnchorSection, sectionOf)
		}
	}
	if sec, ok := sectionOf(first); ok && g.AnchorSection != "" {
		o.HasAnchorDistance, o.AnchorDistance = true, AnchorDistance(sec, g.AnchorSection)
	}

	state, err := lambdaStateOf(e.LambdaState)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	o.Lambda = window.LambdaRun{State: state, Refused: !o.Shipped, Cited: window.CitedSetHash(cited)}
	o.Triage = triageIndex(e, claim, cited, o.Shipped)
	a := answer{topK: e.TopK, citationOffsets: e.Answer.CitationOffsets, gold: item, opt: opt, first: first}
	for _, check := range answerChecks {
		check(a, o)
	}
	return nil
}

// answerChecks decide the per-event counters of window's registry that no
// field of window.Observation implies (Observation.Counters). A metric
// counted per answer is a row of the registry and one of these, which adds
// itself here from the file of its check (in its init); Evaluate runs
// every one on each answer, after the observation's fields are set.
var answerChecks []func(a answer, o *window.Observation)

// answer is what an answer check reads of one answer. It holds the
// event's parts, not the event: the checks are called through func
// values, which the compiler cannot see into, so a pointer to the event
// (on the caller's stack) would move every event to the heap.
type answer struct {
	topK            []wire.TopKItem
	citationOffsets map[string][2]int64
	gold            *Gold
	opt             Options
	first           string // the first citation; "" when the answer cites nothing
}
