package checks

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

func init() { evaluations = append(evaluations, citedDeltaSEvaluation) }

// citedDeltaSEvaluation: a shipped answer's cited ΔS and its zone.
func citedDeltaSEvaluation(o *window.Observation) (Evaluation, bool) {
	return Evaluation{Name: "delta_s_cited", Score: o.DeltaSCited, Label: ZoneOf(o.DeltaSCited).String()},
		o.HasAnswer && o.Shipped && o.HasDeltaSCited
}

// ErrVectorLength is returned by DeltaS for vectors of different lengths.
var ErrVectorLength = errors.New("delta_s: vectors differ in length")

// ErrVectorNotFinite is returned by DeltaS for a NaN or infinite component.
var ErrVectorNotFinite = errors.New("delta_s: vector component is NaN or infinite")

// DeltaS is ΔS = 1 − cos(question, item), clamped to [0,1]. A zero (or
// empty) vector on either side gives 1: nothing is known to be close. It
// never returns NaN: non-finite components and mismatched lengths are
// errors, and each vector is scaled by its largest component first so that
// huge or tiny finite values neither overflow nor underflow.
func DeltaS(question, item []float64) (float64, error) {
	if len(question) != len(item) {
		return 0, fmt.Errorf("%w: %d vs %d", ErrVectorLength, len(question), len(item))
	}
	qmax, err := maxAbs(question)
	if err != nil {
		return 0, err
	}
	imax, err := maxAbs(item)
	if err != nil {
		return 0, err
	}
	if qmax == 0 || imax == 0 {
		return 1, nil
	}
	var dot, qq, ii float64
	for i := range question {
		q, it := question[i]/qmax, item[i]/imax
		dot += q * it
		qq += q * q
		ii += it * it
	}
	cos := dot / (math.Sqrt(qq) * math.Sqrt(ii))
	return min(max(1-cos, 0), 1), nil
}

// maxAbs returns the largest |x| of v, or an error for a non-finite x.
func maxAbs(v []float64) (float64, error) {
	m := 0.0
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, ErrVectorNotFinite
		}
		m = max(m, math.Abs(x))
	}
	return m, nil
}

// retrievedDeltaS is delta_s as sent, else ΔS computed from the embeddings
// of the ranked items that have one.
func retrievedDeltaS(e *wire.TraceEvent, ids []string, dst []float64) ([]float64, error) {
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
func itemDeltaS(e *wire.TraceEvent, ids []string, id string) (float64, bool, error) {
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

// Zone is the ΔS band of SPEC §3.
type Zone int

// The ΔS zones, from closest to farthest.
const (
	ZoneStable       Zone = iota // ΔS < 0.40
	ZoneTransitional             // 0.40 ≤ ΔS < 0.60
	ZoneRisk                     // 0.60 ≤ ΔS < 0.85
	ZoneDanger                   // ΔS ≥ 0.85
)

// ZoneOf returns the zone of ds: stable < 0.40 ≤ transitional < 0.60 ≤ risk
// < 0.85 ≤ danger. Values below 0 are stable; NaN is danger, so a broken
// value never passes as healthy.
func ZoneOf(ds float64) Zone {
	switch {
	case ds < 0.40:
		return ZoneStable
	case ds < 0.60:
		return ZoneTransitional
	case ds < 0.85:
		return ZoneRisk
	default:
		return ZoneDanger
	}
}

// String returns the zone's name as used in reports and labels.
func (z Zone) String() string {
	switch z {
	case ZoneStable:
		return "stable"
	case ZoneTransitional:
		return "transitional"
	case ZoneRisk:
		return "risk"
	case ZoneDanger:
		return "danger"
	}
	return fmt.Sprintf("Zone(%d)", int(z))
}
