package gen

import (
	"bytes"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Shapes are the subsets of a TraceSource event that the benchmarks and
// the load tool send, as the members kept, in order (aliases included,
// since awkward events use them). "small" is a seed 002 trace line plus λ
// state (about 230 bytes with ts); "compact" adds ΔS, so every per-event
// check but triage runs (about 300 bytes). The whole event (about 1.3 KB,
// with top-k texts, so triage runs too) is the third size they use.
var Shapes = map[string][]string{
	"small":   {"qid", "q_id", "retrieved_ids", "answer_json", "lambda_state", "λ_state"},
	"compact": {"qid", "q_id", "retrieved_ids", "answer_json", "delta_s", "ΔS", "delta_s_cited", "lambda_state", "λ_state"},
}

// TSLayout is RFC 3339 with a fixed width, so that a ts can be patched
// into a message in place.
const TSLayout = "2006-01-02T15:04:05.000000000Z"

// Keep returns the JSON object event with only the members named by keys,
// in their order; a name event lacks is skipped.
func Keep(event []byte, keys []string) ([]byte, error) {
	var m map[string]jsontext.Value
	if err := json.Unmarshal(event, &m, jsontext.AllowDuplicateNames(true)); err != nil {
		return nil, fmt.Errorf("keep: %w", err)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + k + `":`)
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
