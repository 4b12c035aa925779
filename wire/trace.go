package wire

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// DefaultArm is the arm of an event that names none, on a subject that
// names none.
const DefaultArm = "live"

// TraceEvent is one retrieval and/or answer event (SPEC §2.2). A seed 002
// runs/trace.jsonl line is a valid event as it is.
type TraceEvent struct {
	QID       string
	EventID   string
	RequestID string
	Arm       string    // empty: the caller takes it from the subject
	TS        time.Time // zero: not sent
	Query     string
	// Paraphrase and Seed are -1 when not sent.
	Paraphrase int
	Seed       int
	// RetrievedIDs is the retrieved_ids field as sent; IDs() applies the
	// rule that topk wins when both are present.
	RetrievedIDs []string
	TopK         []TopKItem
	DeltaS       []float64
	// HasAnswer tells whether answer_json was sent and not null; without
	// it Answer is the empty shipped answer the reference assumes.
	HasAnswer    bool
	Answer       Answer
	DeltaSCited  *float64
	LambdaState  string
	Embeddings   *Embeddings
	IndexHash    string
	LatencyMS    *float64
	HasRetrieval bool // retrieved_ids or topk was sent
}

// TopKItem is one ranked retrieval item.
type TopKItem struct {
	ID        string    `json:"id"`
	Score     *float64  `json:"score"`
	SectionID string    `json:"section_id"`
	Type      string    `json:"type"`
	Offsets   *[2]int64 `json:"offsets"`
	Text      string    `json:"text"`
}

// Answer is the shipped answer. Citations follows the reference's
// `aj.get("citations") or []`: null, false, 0, "", {} and [] all give an
// empty list; any other non-array value sets CitationsNotList, which makes
// the citation hit false.
type Answer struct {
	Claim            string
	Citations        []string
	CitationsNotList bool
	CitationOffsets  map[string][2]int64
}

// Embeddings carries vectors from which ΔS is computed when delta_s is
// absent.
type Embeddings struct {
	Question []float64            `json:"question"`
	Items    map[string][]float64 `json:"items"`
}

// IDs is the ranked retrieved ids: those of topk when it was sent, else
// retrieved_ids.
func (e *TraceEvent) IDs() []string {
	if e.TopK == nil {
		return e.RetrievedIDs
	}
	ids := make([]string, len(e.TopK))
	for i := range e.TopK {
		ids[i] = e.TopK[i].ID
	}
	return ids
}

type traceWire struct {
	QID          *string     `json:"qid"`
	QIDAlias     *string     `json:"q_id"`
	EventID      string      `json:"event_id"`
	RequestID    string      `json:"request_id"`
	Arm          string      `json:"arm"`
	TS           string      `json:"ts"`
	Q            string      `json:"q"`
	Query        string      `json:"query"`
	Paraphrase   *int        `json:"paraphrase"`
	Seed         *int        `json:"seed"`
	RetrievedIDs []string    `json:"retrieved_ids"`
	TopK         []TopKItem  `json:"topk"`
	DeltaS       []float64   `json:"delta_s"`
	DeltaSAlias  []float64   `json:"ΔS"`
	AnswerJSON   *answerWire `json:"answer_json"`
	DeltaSCited  *float64    `json:"delta_s_cited"`
	LambdaState  string      `json:"lambda_state"`
	LambdaAlias  string      `json:"λ_state"`
	Embeddings   *Embeddings `json:"embeddings"`
	IndexHash    string      `json:"index_hash"`
	LatencyMS    *float64    `json:"latency_ms"`
}

type answerWire struct {
	Claim           *string             `json:"claim"`
	Citations       jsontext.Value      `json:"citations"`
	CitationOffsets map[string][2]int64 `json:"citation_offsets"`
}

// DecodeTrace decodes and validates one trace event. Unknown fields are
// ignored. The error is a *FieldError.
//
// Well-formed events take a token-level fast path (tracefast.go); anything
// it is not sure of, every error included, is decoded again by the
// reflection decoder below, which stays the reference: same results, same
// error texts (FuzzDecodeTraceFast compares them).
func DecodeTrace(line []byte) (TraceEvent, error) {
	if e, ok := decodeTraceFast(line, false, nil); ok {
		return e, nil
	}
	return decodeTraceReflect(line)
}

// DecodeTraceShared is DecodeTrace for a line that nobody modifies
// afterwards, such as the payload nats.go allocates for each message: the
// strings of the event may share the line's memory instead of a copy of
// it (the qid, which the windows keep, is still copied).
func DecodeTraceShared(line []byte) (TraceEvent, error) {
	if e, ok := decodeTraceFast(line, true, nil); ok {
		return e, nil
	}
	return decodeTraceReflect(line)
}

// DecodeTraceReuse is DecodeTraceShared for a handler that is done with
// the event before it decodes the next with the same sc: the event's lists
// and citation offsets live in sc, and its qid too shares the line. Use
// Detached for a copy to keep.
func DecodeTraceReuse(line []byte, sc *TraceScratch) (TraceEvent, error) {
	if e, ok := decodeTraceFast(line, true, sc); ok {
		return e, nil
	}
	return decodeTraceReflect(line)
}

// Detached is a copy of e that shares no memory with a TraceScratch (its
// strings still share the line they were decoded from).
func (e TraceEvent) Detached() TraceEvent {
	e.RetrievedIDs = slices.Clone(e.RetrievedIDs)
	e.DeltaS = slices.Clone(e.DeltaS)
	e.Answer.Citations = slices.Clone(e.Answer.Citations)
	e.Answer.CitationOffsets = maps.Clone(e.Answer.CitationOffsets)
	if e.DeltaSCited != nil {
		v := *e.DeltaSCited
		e.DeltaSCited = &v
	}
	if e.LatencyMS != nil {
		v := *e.LatencyMS
		e.LatencyMS = &v
	}
	return e
}

// decodeTraceReflect is the reference decoder: json.Unmarshal into
// traceWire, then the checks of SPEC §2.2.
func decodeTraceReflect(line []byte) (TraceEvent, error) {
	var w traceWire
	if err := unmarshal(line, &w); err != nil {
		return TraceEvent{}, err
	}
	e := TraceEvent{
		EventID:      w.EventID,
		RequestID:    w.RequestID,
		Arm:          w.Arm,
		Query:        w.Q,
		Paraphrase:   -1,
		Seed:         -1,
		RetrievedIDs: w.RetrievedIDs,
		TopK:         w.TopK,
		DeltaS:       w.DeltaS,
		DeltaSCited:  w.DeltaSCited,
		LambdaState:  w.LambdaState,
		Embeddings:   w.Embeddings,
		IndexHash:    w.IndexHash,
		LatencyMS:    w.LatencyMS,
		HasRetrieval: w.RetrievedIDs != nil || w.TopK != nil,
	}
	// The reference takes `t.get("qid") or t.get("q_id")`.
	switch {
	case w.QID != nil && *w.QID != "":
		e.QID = *w.QID
	case w.QIDAlias != nil && *w.QIDAlias != "":
		e.QID = *w.QIDAlias
	default:
		return TraceEvent{}, fieldErr("qid", "required (a non-empty string, or q_id)")
	}
	if e.Query == "" {
		e.Query = w.Query
	}
	if e.DeltaS == nil {
		e.DeltaS = w.DeltaSAlias
	}
	if e.LambdaState == "" {
		e.LambdaState = w.LambdaAlias
	}
	if w.Paraphrase != nil {
		e.Paraphrase = *w.Paraphrase
	}
	if w.Seed != nil {
		e.Seed = *w.Seed
	}
	if err := checkRetrieval(&e, w.TS); err != nil {
		return TraceEvent{}, err
	}
	if w.AnswerJSON != nil {
		e.HasAnswer = true
		a, err := decodeAnswer(w.AnswerJSON)
		if err != nil {
			return TraceEvent{}, err
		}
		e.Answer = a
	} else {
		e.Answer.Citations = []string{}
	}
	return e, nil
}

// checkRetrieval sets e.TS from ts and checks the top-k items and the ΔS
// values, in the order every trace decoder reports the first fault in.
func checkRetrieval(e *TraceEvent, ts string) error {
	if ts != "" {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return fieldErr("ts", "want an RFC 3339 time, got %q", ts)
		}
		e.TS = t
	}
	for i := range e.TopK {
		it := &e.TopK[i]
		if it.ID == "" {
			return fieldErr("topk."+strconv.Itoa(i)+".id", "required")
		}
		if it.Offsets != nil && (it.Offsets[0] < 0 || it.Offsets[1] < it.Offsets[0]) {
			return fieldErr("topk."+strconv.Itoa(i)+".offsets", "want 0 <= start <= end")
		}
		if !validDotPath(it.SectionID) {
			return checkDotPath("topk."+strconv.Itoa(i)+".section_id", it.SectionID)
		}
	}
	if e.DeltaSCited != nil && (*e.DeltaSCited < 0 || *e.DeltaSCited > 1) {
		return fieldErr("delta_s_cited", "want a number in [0,1], got %v", *e.DeltaSCited)
	}
	for i, ds := range e.DeltaS {
		if ds < 0 || ds > 1 {
			return fieldErr("delta_s."+strconv.Itoa(i), "want a number in [0,1], got %v", ds)
		}
	}
	return nil
}

func decodeAnswer(w *answerWire) (Answer, error) {
	a := Answer{CitationOffsets: w.CitationOffsets}
	if w.Claim != nil {
		a.Claim = *w.Claim
	}
	for id, off := range a.CitationOffsets {
		if off[0] < 0 || off[1] < off[0] {
			return Answer{}, fieldErr("answer_json.citation_offsets."+id, "want 0 <= start <= end")
		}
	}
	cits, notList, err := citationsOf(w.Citations)
	if err != nil {
		return Answer{}, err
	}
	a.Citations, a.CitationsNotList = cits, notList
	return a, nil
}

// citationsOf applies Python truthiness to the citations value: a falsy one
// is the empty list, an array must hold strings, and any other truthy value
// is "not a list".
func citationsOf(v jsontext.Value) (ids []string, notList bool, err error) {
	if len(v) == 0 || !Truthy(v) {
		return []string{}, false, nil
	}
	if v.Kind() != '[' {
		return nil, true, nil
	}
	if err := json.Unmarshal(v, &ids); err != nil {
		fe := asFieldError(err)
		fe.Field = join("answer_json.citations", fe.Field)
		return nil, false, fe
	}
	return ids, false, nil
}

// Truthy is Python's bool() of the value json.loads would make of v: false
// for null, false, "", 0, 0.0 (also a literal that underflows to zero, such
// as 1e-400), [] and {}; true for everything else (1e400 is infinity, so
// true). An absent (empty) or malformed v is false.
func Truthy(v jsontext.Value) bool {
	b := trimJSONSpace(v)
	if len(b) == 0 {
		return false
	}
	switch b[0] {
	case 't':
		return true
	case 'n', 'f':
		return false
	case '"':
		return len(b) > 2 // any escape decodes to at least one character
	case '[', '{':
		rest := trimJSONSpace(b[1:])
		return len(rest) > 0 && rest[0] != ']' && rest[0] != '}'
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return numberTruthy(string(b))
	}
	return false
}

// numberTruthy: json.loads makes an int of a literal without fraction or
// exponent (non-zero when any digit is) and a float of the others.
func numberTruthy(s string) bool {
	isFloat := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '.' || c == 'e' || c == 'E' {
			isFloat = true
			break
		}
	}
	if !isFloat {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c >= '1' && c <= '9' {
				return true
			}
		}
		return false
	}
	// ParseFloat rounds correctly like Python's float(): overflow gives ±Inf
	// (with an error we ignore), underflow gives zero.
	f, _ := strconv.ParseFloat(s, 64)
	return f != 0
}

func trimJSONSpace(b []byte) []byte {
	for len(b) > 0 && isJSONSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isJSONSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isJSONSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func join(a, b string) string {
	if b == "" {
		return a
	}
	return a + "." + b
}
