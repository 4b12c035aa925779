package sidecar

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/shadoweval/shadoweval/internal/pycompat"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/window"
)

// EvalOptions are the settings of the live per-event checks.
type EvalOptions struct {
	Ks        []int // cut-offs of recall@k, P@k and R@k
	Tolerance int64 // citation offset tolerance in bytes
}

// ErrBadEvent wraps the reasons an event that decoded cleanly still cannot
// be scored (an unknown λ state, embeddings of different lengths, …).
var ErrBadEvent = errors.New("bad event")

// Evaluate runs every check of SPEC §3 on one event against its gold item
// and fills o, reusing its slices. hasAnswer is false for a retrieval half
// whose answer never came: only retrieval metrics are scored then. The live
// path reads the gold set G as gold_citations ∪ relevant and the ranked ids
// of topk before retrieved_ids (SPEC §2); a trace without an answer is a
// shipped empty claim and one without ids retrieved nothing, as in the
// reference.
func Evaluate(e *stream.TraceEvent, g *stream.Gold, hasAnswer bool, opt EvalOptions, o *window.Observation) error {
	return evaluate(e, newGoldItem(*g), hasAnswer, opt, o)
}

// evaluate is Evaluate on a loaded gold item (its substrings prepared).
func evaluate(e *stream.TraceEvent, item *GoldItem, hasAnswer bool, opt EvalOptions, o *window.Observation) error {
	g := &item.Gold
	gold := item.citations
	ids := rankedIDs(e)
	*o = window.Observation{
		Arm: e.Arm, Type: g.Type, QID: e.QID, QIDKey: item.key, Time: e.TS,
		Answerable:      g.Answerable,
		HasRetrieval:    true,
		PrecisionAtK:    o.PrecisionAtK[:0],
		RecallAtK:       o.RecallAtK[:0],
		DeltaSRetrieved: o.DeltaSRetrieved[:0],
		Triage:          -1,
	}
	if !retrievalAtKs(gold, ids, opt.Ks, o) {
		for i, k := range opt.Ks {
			if RecallStrict(gold, ids, k) {
				o.RecallStrict |= 1 << i
			}
			o.PrecisionAtK = append(o.PrecisionAtK, PrecisionAtK(gold, ids, k))
			if r, ok := RecallAtK(gold, ids, k); ok {
				o.RecallAtK = append(o.RecallAtK, r)
				o.HasRecallAtK = true
			}
		}
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
	if len(g.RelevantOffsets) > 0 {
		o.CitationAccEligible = true
		off, haveOff := e.Answer.CitationOffsets[first]
		if !haveOff {
			for i := range e.TopK {
				if e.TopK[i].ID == first && e.TopK[i].Offsets != nil {
					off, haveOff = *e.TopK[i].Offsets, true
					break
				}
			}
		}
		o.CitationAccurate = CitationAccurate(first, off, haveOff, gold, g.RelevantOffsets, opt.Tolerance)
	}
	if sec, ok := sectionOf(first); ok && g.AnchorSection != "" {
		o.HasAnchorDistance, o.AnchorDistance = true, AnchorDistance(sec, g.AnchorSection)
	}

	state, err := lambdaStateOf(e.LambdaState)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	o.Lambda = window.LambdaRun{State: windowLambda(state), Refused: !o.Shipped, Cited: window.CitedSetHash(cited)}
	o.Triage = triageIndex(e, claim, cited, o.Shipped)
	return nil
}

// lambdaStateOf is ParseLambdaState, without its Python string work for
// the states as they are normally sent.
func lambdaStateOf(s string) (LambdaState, error) {
	switch s {
	case "":
		return LambdaNone, nil
	case "→":
		return LambdaConvergent, nil
	case "←":
		return LambdaDivergent, nil
	case "<>":
		return LambdaRecursive, nil
	case "×":
		return LambdaChaotic, nil
	}
	return ParseLambdaState(s)
}

// rankedIDs is e.IDs() without its copy when retrieved_ids already lists
// the ids of topk, as producers usually send both.
func rankedIDs(e *stream.TraceEvent) []string {
	if e.TopK == nil || len(e.RetrievedIDs) != len(e.TopK) || e.RetrievedIDs == nil {
		return e.IDs()
	}
	for i := range e.TopK {
		if e.TopK[i].ID != e.RetrievedIDs[i] {
			return e.IDs()
		}
	}
	return e.RetrievedIDs
}

// retrievalAtKs fills RecallStrict, PrecisionAtK and RecallAtK of o for
// every k at once, with the counts RecallStrict, PrecisionAtK and
// RecallAtK would make k by k: for each rank, whether its id is the first
// of its kind and whether it is a gold id. It handles lists of up to 64
// ranked and smallSet gold ids and says false otherwise.
func retrievalAtKs(gold, ids []string, ks []int, o *window.Observation) bool {
	if len(ids) > 64 || len(gold) > smallSet {
		return false
	}
	// Strings are compared only where their keys agree (idKey: equal
	// strings have equal keys), which for distinct ids is nowhere.
	var idKeys [64]uint64
	var goldKeys [smallSet]uint64
	for i, id := range gold {
		goldKeys[i] = idKey(id)
	}
	var first, hit uint64 // bit j: ids[j] is new in ids[:j+1]; ids[j] is a gold id
	for j, id := range ids {
		k := idKey(id)
		idKeys[j] = k
		seen := false
		for i := 0; i < j; i++ {
			if idKeys[i] == k && ids[i] == id {
				seen = true
				break
			}
		}
		if seen {
			continue
		}
		first |= 1 << j
		for i := range gold {
			if goldKeys[i] == k && gold[i] == id {
				hit |= 1 << j
				break
			}
		}
	}
	// The ranks needed to hold every gold id (-1: no gold ids; past the
	// end: some gold id is not retrieved). hit marks the first rank of
	// each distinct gold id retrieved, so when there are as many marks as
	// distinct gold ids, the highest is the rank needed.
	distinctGold := 0
	for i, id := range gold {
		dup := false
		for j := 0; j < i; j++ {
			if goldKeys[j] == goldKeys[i] && gold[j] == id {
				dup = true
				break
			}
		}
		if !dup {
			distinctGold++
		}
	}
	need := -1
	switch {
	case distinctGold == 0:
	case bits.OnesCount64(hit) == distinctGold:
		need = 63 - bits.LeadingZeros64(hit)
	default:
		need = len(ids)
	}
	for i, k := range ks {
		n := len(TopK(ids, k))
		upto := uint64(1)<<n - 1
		inter := bits.OnesCount64(hit & upto)
		if need < n {
			o.RecallStrict |= 1 << i
		}
		p := 0.0
		if n > 0 {
			p = float64(inter) / float64(bits.OnesCount64(first&upto))
		}
		o.PrecisionAtK = append(o.PrecisionAtK, p)
		if distinctGold > 0 {
			o.RecallAtK = append(o.RecallAtK, float64(inter)/float64(distinctGold))
			o.HasRecallAtK = true
		}
	}
	return true
}

// idKey packs an id's length and up to 16 of its bytes (the first and last
// 8, or 4 for ids of 4 to 7 bytes) into a word: equal ids have equal keys,
// and distinct ones almost never do.
func idKey(s string) uint64 {
	n := len(s)
	switch {
	case n >= 8:
		return binary.LittleEndian.Uint64([]byte(s[:8])) ^ bits.RotateLeft64(binary.LittleEndian.Uint64([]byte(s[n-8:])), 29) ^ uint64(n)*0x9E3779B97F4A7C15
	case n >= 4:
		// Two loads that overlap cover every byte.
		return uint64(binary.LittleEndian.Uint32([]byte(s[:4]))) | uint64(binary.LittleEndian.Uint32([]byte(s[n-4:])))<<32 ^ uint64(n)*0x9E3779B97F4A7C15
	}
	var k uint64
	for i := 0; i < n; i++ {
		k |= uint64(s[i]) << (8 * i)
	}
	return k ^ uint64(n)<<59
}

func windowLambda(s LambdaState) window.LambdaState {
	switch s {
	case LambdaNone:
		return window.LambdaNone
	case LambdaConvergent:
		return window.LambdaConvergent
	case LambdaDivergent:
		return window.LambdaDivergent
	}
	return window.LambdaOther
}

// retrievedDeltaS is delta_s as sent, else ΔS computed from the embeddings
// of the ranked items that have one.
func retrievedDeltaS(e *stream.TraceEvent, ids []string, dst []float64) ([]float64, error) {
	if e.DeltaS != nil {
		return append(dst, e.DeltaS...), nil
	}
	if e.Embeddings == nil || e.Embeddings.Question == nil {
		return dst, nil
	}
	for _, id := range ids {
		vec, ok := e.Embeddings.Items[id]
		if !ok {
			continue
		}
		ds, err := DeltaS(e.Embeddings.Question, vec)
		if err != nil {
			return dst, fmt.Errorf("%w: embeddings.items.%s: %v", ErrBadEvent, id, err)
		}
		dst = append(dst, ds)
	}
	return dst, nil
}

// itemDeltaS is the ΔS of the ranked item id: from delta_s at its rank,
// else from the embeddings.
func itemDeltaS(e *stream.TraceEvent, ids []string, id string) (float64, bool, error) {
	if e.DeltaS != nil {
		if i := slices.Index(ids, id); i >= 0 && i < len(e.DeltaS) {
			return e.DeltaS[i], true, nil
		}
		return 0, false, nil
	}
	if e.Embeddings == nil || e.Embeddings.Question == nil {
		return 0, false, nil
	}
	vec, ok := e.Embeddings.Items[id]
	if !ok {
		return 0, false, nil
	}
	ds, err := DeltaS(e.Embeddings.Question, vec)
	if err != nil {
		return 0, false, fmt.Errorf("%w: embeddings.items.%s: %v", ErrBadEvent, id, err)
	}
	return ds, true, nil
}

// triageIndex applies the seed 004 rules when the event carries the text of
// its top-k items. The structured answer is rendered in the seed's template
// ("citations: [a, b]" after the claim) so that its template check means
// the same thing: a shipped answer must cite.
func triageIndex(e *stream.TraceEvent, claim string, cited []string, shipped bool) int {
	hasText := false
	for i := range e.TopK {
		if e.TopK[i].Text != "" {
			hasText = true
			break
		}
	}
	if !hasText {
		return -1
	}
	var idBuf, textBuf [16]string // on the stack for the usual top k
	ids, texts := idBuf[:0], textBuf[:0]
	for i := range e.TopK {
		ids, texts = append(ids, e.TopK[i].ID), append(texts, e.TopK[i].Text)
	}
	answer := claim
	if shipped && len(cited) > 0 {
		answer = claim + "\ncitations: [" + strings.Join(cited, ", ") + "]"
	}
	label := Triage(e.Query, answer, ids, texts).Label
	return slices.Index(window.TriageLabels, label)
}
