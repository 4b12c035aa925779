package wire

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/shadoweval/shadoweval/wire/gen"
)

// jsonexpDecoder is the trace decoder built on go-json-experiment that the
// live path's decoder (decodeTraceFast in front of decodeTraceReflect) is
// measured against (BenchmarkTraceDecoders) and checked against
// (TestTraceDecodersAgree, FuzzDecodeTraceJSONExp). It stays a test oracle
// because the paired benchmark has the live decoder well over 1.5x faster
// on every realistic event shape.
//
// It walks the tokens of a jsontext.Decoder with the live decoder's memory
// rules: strings are substrings of the line (or of one copy of it), lists
// share one backing array, and with reuse they live in the decoder. The
// library does all the JSON work: syntax, UTF-8, escapes, duplicate names,
// the end of input. Objects and lists are read token by token and scalars
// whole, in the order json.Unmarshal reads a traceWire, and every value of
// a kind the walk does not expect goes to json.UnmarshalDecode with the Go
// type json.Unmarshal would fill, so that results and error texts are
// json.Unmarshal's.
type jsonexpDecoder struct {
	dec jsontext.Decoder
	buf bytes.Buffer // wraps the line: the decoder reads it in place
	// sub reads the items of a citations array read whole by dec.
	sub    jsontext.Decoder
	subBuf bytes.Buffer

	line  []byte
	s     string // the line as a string: itself when shared, else one copy made on the first string
	reuse bool   // lists, citation offsets and the qid live in the decoder

	f       traceFields // here, not on the stack: its address escapes
	strs    []string
	nums    []float64
	offsets map[string][2]int64
	name    []byte // unquoted member names

	// Scores and offsets of the current topk, pointed at from one
	// allocation each once the list is read.
	tkItems []TopKItem
	tkScore []float64
	tkOff   [][2]int64
	tkHas   []uint8
}

// tspan is a list read into the decoder's strs or nums: [start:end]. A list
// that is not set (null, absent) is nil; a set one is not, even when empty.
type tspan struct {
	start, end int
	set        bool
}

func (sp tspan) strings(all []string) []string {
	switch {
	case !sp.set:
		return nil
	case sp.start == sp.end:
		return []string{}
	}
	return all[sp.start:sp.end:sp.end]
}

func (sp tspan) floats(all []float64) []float64 {
	switch {
	case !sp.set:
		return nil
	case sp.start == sp.end:
		return []float64{}
	}
	return all[sp.start:sp.end:sp.end]
}

// traceFields are the members of a trace event as sent, before the checks.
type traceFields struct {
	qid, qidAlias               string
	haveQID, haveQIDAlias       bool
	eventID, requestID, arm, ts string
	q, query                    string
	lambda, lambdaAlias         string
	indexHash                   string
	para, seed                  int
	havePara, haveSeed          bool
	retrieved                   tspan
	topk                        []TopKItem
	ds, dsAlias                 tspan
	dsCited, latency            float64
	haveDSCited, haveLatency    bool
	embeddings                  *Embeddings
	haveAnswer                  bool
	answer                      answerFields
}

type answerFields struct {
	claim     string
	citations tspan
	// notList: a truthy value that is not an array. citationsRaw: an
	// array that is not all strings and nulls, for citationsOf to name the
	// culprit once the whole event is read, as the reflection decoder does.
	notList      bool
	citationsRaw []byte
	offsets      map[string][2]int64
}

// decode is DecodeTrace (neither flag), DecodeTraceShared (shared) or
// DecodeTraceReuse (both) done by the oracle.
func (d *jsonexpDecoder) decode(line []byte, shared, reuse bool) (TraceEvent, error) {
	d.line, d.reuse = line, reuse
	d.s = ""
	if shared && len(line) > 0 {
		d.s = unsafe.String(&line[0], len(line))
	}
	if reuse {
		d.strs, d.nums = d.strs[:0], d.nums[:0]
	} else {
		d.strs, d.nums = nil, nil
	}
	d.buf = *bytes.NewBuffer(line)
	d.dec.Reset(&d.buf)
	d.f = traceFields{}
	err := d.event(&d.f)
	d.line, d.s = nil, ""
	if err != nil {
		return TraceEvent{}, err
	}
	return d.finish(&d.f)
}

// syntax turns an error of the decoder into a FieldError. A stream
// decoder reports the end of input as io.EOF where json.Unmarshal, which
// reads one value, reports a syntax error: that one is asked of the
// library.
func (d *jsonexpDecoder) syntax(err error) error {
	if err == io.EOF {
		return d.wholeLineErr()
	}
	return asFieldError(err)
}

// wholeLineErr is json.Unmarshal's error for the line as a whole (the
// top-level value being valid or absent).
func (d *jsonexpDecoder) wholeLineErr() error {
	var v jsontext.Value
	if err := json.Unmarshal(d.line, &v); err != nil {
		return asFieldError(err)
	}
	return &FieldError{Msg: "invalid JSON"} // not reached: the walk found a fault
}

// decodeInto lets the library decode the next value into v: the values of
// unexpected kinds (an error, or null where the walk wants a list item).
func (d *jsonexpDecoder) decodeInto(v any) error {
	if err := json.UnmarshalDecode(&d.dec, v); err != nil {
		if err == io.EOF {
			return d.wholeLineErr()
		}
		return asFieldError(err)
	}
	return nil
}

// event reads the top-level value into f.
func (d *jsonexpDecoder) event(f *traceFields) error {
	switch d.dec.PeekKind() {
	case '{':
	case 'n':
		if _, err := d.dec.ReadToken(); err != nil {
			return d.syntax(err)
		}
		return d.end()
	default:
		tok, err := d.dec.ReadToken()
		if err != nil {
			return d.syntax(err)
		}
		return fieldErr("", "want an object, got %s", KindName(tok.Kind()))
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return d.syntax(err)
	}
	for d.dec.PeekKind() != '}' {
		name, err := d.memberName()
		if err != nil {
			return err
		}
		switch string(name) {
		case "qid":
			f.qid, f.haveQID, err = d.stringPtr()
		case "q_id":
			f.qidAlias, f.haveQIDAlias, err = d.stringPtr()
		case "event_id":
			f.eventID, err = d.str()
		case "request_id":
			f.requestID, err = d.str()
		case "arm":
			f.arm, err = d.str()
		case "ts":
			f.ts, err = d.str()
		case "q":
			f.q, err = d.str()
		case "query":
			f.query, err = d.str()
		case "paraphrase":
			var v int64
			v, f.havePara, err = d.integer(false)
			f.para = int(v)
		case "seed":
			var v int64
			v, f.haveSeed, err = d.integer(false)
			f.seed = int(v)
		case "retrieved_ids":
			f.retrieved, err = d.strings()
		case "topk":
			f.topk, err = d.topK()
		case "delta_s":
			f.ds, err = d.floats()
		case "ΔS":
			f.dsAlias, err = d.floats()
		case "answer_json":
			f.haveAnswer, err = d.answer(&f.answer)
		case "delta_s_cited":
			f.dsCited, f.haveDSCited, err = d.floatPtr()
		case "lambda_state":
			f.lambda, err = d.str()
		case "λ_state":
			f.lambdaAlias, err = d.str()
		case "embeddings":
			f.embeddings = nil
			err = d.decodeInto(&f.embeddings)
		case "index_hash":
			f.indexHash, err = d.str()
		case "latency_ms":
			f.latency, f.haveLatency, err = d.floatPtr()
		default:
			if err := d.dec.SkipValue(); err != nil {
				return d.syntax(err)
			}
		}
		if err != nil {
			return err
		}
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return d.syntax(err)
	}
	return d.end()
}

// end requires nothing but white space after the top-level value.
func (d *jsonexpDecoder) end() error {
	for _, c := range d.dec.UnreadBuffer() {
		if !isJSONSpace(c) {
			return d.wholeLineErr()
		}
	}
	return nil
}

// memberName reads a member name (the decoder refuses duplicates).
func (d *jsonexpDecoder) memberName() ([]byte, error) {
	raw, err := d.dec.ReadValue()
	if err != nil {
		return nil, d.syntax(err)
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], nil
	}
	d.name, _ = jsontext.AppendUnquote(d.name[:0], raw) // validated by the decoder
	return d.name, nil
}

// text is the string value raw just read, shared with the line when
// allowed, else a substring of one copy of it.
func (d *jsonexpDecoder) text(raw jsontext.Value) string {
	return d.textAt(raw, int(d.dec.InputOffset())-1)
}

// textAt is text for the string value raw whose closing quote is at
// line[end].
func (d *jsonexpDecoder) textAt(raw jsontext.Value, end int) string {
	if len(raw) == 2 {
		return ""
	}
	if bytes.IndexByte(raw, '\\') >= 0 {
		b, _ := jsontext.AppendUnquote(nil, raw) // validated by the decoder
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	start := end - (len(raw) - 2)
	if d.s == "" {
		d.s = string(d.line)
	}
	return d.s[start:end]
}

// str reads a string or null ("").
func (d *jsonexpDecoder) str() (string, error) {
	s, _, err := d.stringPtr()
	return s, err
}

// The scalars are read the way the library's decoders of scalars read
// them: the whole value, then its kind.

// value reads the next value whole.
func (d *jsonexpDecoder) value() (jsontext.Value, error) {
	raw, err := d.dec.ReadValue()
	if err != nil {
		return nil, d.syntax(err)
	}
	return raw, nil
}

// leaf is json.Unmarshal of the value raw just read into v: the value or
// the library's error, placed at that value.
func (d *jsonexpDecoder) leaf(raw jsontext.Value, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		fe := asFieldError(err)
		fe.Field = dotted(d.dec.StackPointer())
		return fe
	}
	return nil
}

// stringPtr reads a string; set is false for null.
func (d *jsonexpDecoder) stringPtr() (string, bool, error) {
	raw, err := d.value()
	if err != nil {
		return "", false, err
	}
	switch raw.Kind() {
	case '"':
		return d.text(raw), true, nil
	case 'n':
		return "", false, nil
	}
	var s string
	return "", false, d.leaf(raw, &s)
}

// floatPtr reads a number; set is false for null.
func (d *jsonexpDecoder) floatPtr() (float64, bool, error) {
	raw, err := d.value()
	if err != nil {
		return 0, false, err
	}
	switch raw.Kind() {
	case '0':
		if f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(raw), len(raw)), 64); err == nil {
			return f, true, nil
		}
	case 'n':
		return 0, false, nil
	}
	var f float64
	err = d.leaf(raw, &f)
	return f, err == nil, err
}

// integer reads an integer into an int64 (is64) or an int by the
// library's rules; set is false for null. Plain forms of up to 18 digits
// are read here, the others by the library.
func (d *jsonexpDecoder) integer(is64 bool) (v int64, set bool, err error) {
	raw, err := d.value()
	if err != nil {
		return 0, false, err
	}
	switch raw.Kind() {
	case '0':
		if v, ok := plainInt(raw); ok {
			return v, true, nil
		}
	case 'n':
		return 0, false, nil
	}
	if is64 {
		var n int64
		err = d.leaf(raw, &n)
		return n, err == nil, err
	}
	var n int
	err = d.leaf(raw, &n)
	return int64(n), err == nil, err
}

// plainInt reads an integer without fraction or exponent of at most 18
// digits, other than -0.
func plainInt(b []byte) (int64, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 || neg && b[0] == '0' {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// open reads the '[' or '{' of a list or object; null gives ok false.
// Any other value goes to the library with a new v(), of the type
// json.Unmarshal would fill, for its error.
func (d *jsonexpDecoder) open(k jsontext.Kind, v func() any) (ok bool, err error) {
	switch d.dec.PeekKind() {
	case k:
		if _, err := d.dec.ReadToken(); err != nil {
			return false, d.syntax(err)
		}
		return true, nil
	case 'n':
		if _, err := d.dec.ReadToken(); err != nil {
			return false, d.syntax(err)
		}
		return false, nil
	}
	return false, d.decodeInto(v())
}

func (d *jsonexpDecoder) closeToken() error {
	if _, err := d.dec.ReadToken(); err != nil {
		return d.syntax(err)
	}
	return nil
}

// strings reads a list of strings onto d.strs (null items are "", as
// json.Unmarshal makes them).
func (d *jsonexpDecoder) strings() (tspan, error) {
	sp := tspan{start: len(d.strs), end: len(d.strs)}
	ok, err := d.open('[', func() any { return new([]string) })
	if !ok {
		return sp, err
	}
	sp.set = true
	for d.dec.PeekKind() != ']' {
		s, err := d.str()
		if err != nil {
			return sp, err
		}
		d.strs = append(d.strs, s)
	}
	sp.end = len(d.strs)
	return sp, d.closeToken()
}

// floats reads a list of numbers onto d.nums.
func (d *jsonexpDecoder) floats() (tspan, error) {
	sp := tspan{start: len(d.nums), end: len(d.nums)}
	ok, err := d.open('[', func() any { return new([]float64) })
	if !ok {
		return sp, err
	}
	sp.set = true
	for d.dec.PeekKind() != ']' {
		f, _, err := d.floatPtr() // null is 0
		if err != nil {
			return sp, err
		}
		d.nums = append(d.nums, f)
	}
	sp.end = len(d.nums)
	return sp, d.closeToken()
}

// pair reads [start,end] into a [2]int64 by json.Unmarshal's rules; set is
// false for null.
func (d *jsonexpDecoder) pair() (v [2]int64, set bool, err error) {
	ok, err := d.open('[', func() any { return new([2]int64) })
	if !ok {
		return v, false, err
	}
	start := int(d.dec.InputOffset()) - 1
	n := 0
	for d.dec.PeekKind() != ']' {
		if n >= 2 {
			if err := d.dec.SkipValue(); err != nil {
				return v, false, d.syntax(err)
			}
			n++
			continue
		}
		if v[n], _, err = d.integer(true); err != nil { // null is 0
			return v, false, err
		}
		n++
	}
	if err := d.closeToken(); err != nil {
		return v, false, err
	}
	if n != 2 {
		// Too few or too many: the library's error for the whole array.
		var w [2]int64
		return v, false, d.leaf(d.line[start:d.dec.InputOffset()], &w)
	}
	return v, true, nil
}

// topK reads the ranked items (null: nil; []: empty, not nil).
func (d *jsonexpDecoder) topK() ([]TopKItem, error) {
	ok, err := d.open('[', func() any { return new([]TopKItem) })
	if !ok {
		return nil, err
	}
	// Read into the decoder's memory, copied out in one allocation.
	items := d.tkItems[:0]
	d.tkScore, d.tkOff, d.tkHas = d.tkScore[:0], d.tkOff[:0], d.tkHas[:0]
	for d.dec.PeekKind() != ']' {
		items = append(items, TopKItem{})
		it := &items[len(items)-1]
		var score float64
		var off [2]int64
		var has uint8
		ok, err := d.open('{', func() any { return new(TopKItem) })
		if err != nil {
			return nil, err
		}
		for ok && d.dec.PeekKind() != '}' {
			name, err := d.memberName()
			if err != nil {
				return nil, err
			}
			switch string(name) {
			case "id":
				it.ID, err = d.str()
			case "score":
				var set bool
				if score, set, err = d.floatPtr(); set {
					has |= 1
				} else {
					has &^= 1
				}
			case "section_id":
				it.SectionID, err = d.str()
			case "type":
				it.Type, err = d.str()
			case "offsets":
				var set bool
				if off, set, err = d.pair(); set {
					has |= 2
				} else {
					has &^= 2
				}
			case "text":
				it.Text, err = d.str()
			default:
				if err := d.dec.SkipValue(); err != nil {
					return nil, d.syntax(err)
				}
			}
			if err != nil {
				return nil, err
			}
		}
		if ok {
			if err := d.closeToken(); err != nil {
				return nil, err
			}
		}
		d.tkScore, d.tkOff, d.tkHas = append(d.tkScore, score), append(d.tkOff, off), append(d.tkHas, has)
	}
	d.tkItems = items
	if err := d.closeToken(); err != nil {
		return nil, err
	}
	items = append([]TopKItem{}, items...)
	clear(d.tkItems) // drop the strings
	pointScores(items, d.tkHas, d.tkScore, d.tkOff)
	return items, nil
}

// answer reads answer_json; set is false for null.
func (d *jsonexpDecoder) answer(a *answerFields) (set bool, err error) {
	*a = answerFields{citations: tspan{set: true}} // absent: []
	ok, err := d.open('{', func() any { return new(answerWire) })
	if !ok {
		return false, err
	}
	for d.dec.PeekKind() != '}' {
		name, err := d.memberName()
		if err != nil {
			return false, err
		}
		switch string(name) {
		case "claim":
			a.claim, _, err = d.stringPtr()
		case "citations":
			err = d.citations(a)
		case "citation_offsets":
			a.offsets, err = d.offsetMap()
		default:
			if err := d.dec.SkipValue(); err != nil {
				return false, d.syntax(err)
			}
		}
		if err != nil {
			return false, err
		}
	}
	return true, d.closeToken()
}

// citations applies citationsOf's rules to the value: an array of strings
// (nulls are ""), else truthiness. The value is read whole, as
// json.Unmarshal reads a jsontext.Value (its syntax errors name the item),
// and an array's items are then read from it by a second decoder.
func (d *jsonexpDecoder) citations(a *answerFields) error {
	a.citations, a.notList, a.citationsRaw = tspan{start: len(d.strs), end: len(d.strs), set: true}, false, nil
	raw, err := d.dec.ReadValue()
	if err != nil {
		return d.syntax(err)
	}
	if raw.Kind() != '[' {
		if Truthy(raw) {
			a.citations.set, a.notList = false, true
		}
		return nil
	}
	start := int(d.dec.InputOffset()) - len(raw)
	d.subBuf = *bytes.NewBuffer(raw)
	d.sub.Reset(&d.subBuf)
	d.sub.ReadToken() // [
	for d.sub.PeekKind() != ']' {
		v, _ := d.sub.ReadValue() // valid: read above
		switch v.Kind() {
		case '"':
			end := start + int(d.sub.InputOffset()) - 1
			d.strs = append(d.strs, d.textAt(v, end))
		case 'n':
			d.strs = append(d.strs, "")
		default:
			// Reported once the whole event is read, as the reflection
			// decoder checks citations last.
			a.citationsRaw = raw
			return nil
		}
	}
	a.citations.end = len(d.strs)
	return nil
}

// offsetMap reads citation_offsets (null: nil; {}: empty, not nil).
func (d *jsonexpDecoder) offsetMap() (map[string][2]int64, error) {
	ok, err := d.open('{', func() any { return new(map[string][2]int64) })
	if !ok {
		return nil, err
	}
	var m map[string][2]int64
	if d.reuse {
		if d.offsets == nil {
			d.offsets = map[string][2]int64{}
		}
		m = d.offsets
		clear(m)
	} else {
		m = map[string][2]int64{}
	}
	for d.dec.PeekKind() != '}' {
		raw, err := d.dec.ReadValue()
		if err != nil {
			return nil, d.syntax(err)
		}
		key := d.text(raw)
		v, _, err := d.pair() // null is [0,0], as json.Unmarshal stores it
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
	return m, d.closeToken()
}

// finish is what the reflection decoder does with the wire values: the
// aliases, the defaults and the checks of SPEC §2.2, in its order.
func (d *jsonexpDecoder) finish(f *traceFields) (TraceEvent, error) {
	// The numbers get two more (ΔS cited, latency) without growing: the
	// event points at them.
	nums := d.nums
	if f.haveDSCited || f.haveLatency {
		nums = append(nums, f.dsCited, f.latency)
	}
	e := TraceEvent{
		EventID:      f.eventID,
		RequestID:    f.requestID,
		Arm:          f.arm,
		Query:        f.q,
		Paraphrase:   -1,
		Seed:         -1,
		RetrievedIDs: f.retrieved.strings(d.strs),
		TopK:         f.topk,
		DeltaS:       f.ds.floats(nums),
		LambdaState:  f.lambda,
		Embeddings:   f.embeddings,
		IndexHash:    f.indexHash,
		HasRetrieval: f.retrieved.set || f.topk != nil,
	}
	if f.haveDSCited {
		e.DeltaSCited = &nums[len(nums)-2]
	}
	if f.haveLatency {
		e.LatencyMS = &nums[len(nums)-1]
	}
	if d.reuse {
		d.nums = nums
	}
	// The reference takes `t.get("qid") or t.get("q_id")`.
	switch {
	case f.haveQID && f.qid != "":
		e.QID = f.qid
	case f.haveQIDAlias && f.qidAlias != "":
		e.QID = f.qidAlias
	default:
		return TraceEvent{}, fieldErr("qid", "required (a non-empty string, or q_id)")
	}
	if !d.reuse {
		// The windows keep the qid: it must not pin the line.
		e.QID = strings.Clone(e.QID)
	}
	if e.Query == "" {
		e.Query = f.query
	}
	if e.DeltaS == nil {
		e.DeltaS = f.dsAlias.floats(nums)
	}
	if e.LambdaState == "" {
		e.LambdaState = f.lambdaAlias
	}
	if f.havePara {
		e.Paraphrase = f.para
	}
	if f.haveSeed {
		e.Seed = f.seed
	}
	if err := checkRetrieval(&e, f.ts); err != nil {
		return TraceEvent{}, err
	}
	if !f.haveAnswer {
		e.Answer.Citations = []string{}
		return e, nil
	}
	e.HasAnswer = true
	a := &f.answer
	for id, off := range a.offsets {
		if off[0] < 0 || off[1] < off[0] {
			return TraceEvent{}, fieldErr("answer_json.citation_offsets."+id, "want 0 <= start <= end")
		}
	}
	if a.citationsRaw != nil {
		if _, _, err := citationsOf(a.citationsRaw); err != nil {
			return TraceEvent{}, err
		}
	}
	e.Answer = Answer{Claim: a.claim, Citations: a.citations.strings(d.strs), CitationsNotList: a.notList, CitationOffsets: a.offsets}
	return e, nil
}

// The live decoder and the oracle must agree on every input: the same
// event, or the same error text. The reflection decoder, the reference of
// the live path's fallback, is held to the same.

var (
	agreeScratch TraceScratch
	agreeOracle  jsonexpDecoder
)

func checkAgree(t *testing.T, line []byte) {
	t.Helper()
	want, wantErr := decodeTraceReflect(line)
	same := func(name string, got TraceEvent, err error) {
		t.Helper()
		switch {
		case (err == nil) != (wantErr == nil):
			t.Fatalf("%s(%q): error %v, reference %v", name, line, err, wantErr)
		case err != nil && err.Error() != wantErr.Error():
			t.Fatalf("%s(%q): error\n %q\nreference\n %q", name, line, err, wantErr)
		case !reflect.DeepEqual(got, want):
			t.Fatalf("%s(%q):\n got      %#v\nreference %#v", name, line, got, want)
		}
	}
	got, err := DecodeTrace(line)
	same("DecodeTrace", got, err)
	got, err = DecodeTraceShared(line)
	same("DecodeTraceShared", got, err)
	got, err = DecodeTraceReuse(line, &agreeScratch)
	same("DecodeTraceReuse", got, err)
	// The oracle in its three memory modes, the reused one shared by every
	// case so that what one event leaves in it must not show in the next.
	got, err = new(jsonexpDecoder).decode(line, false, false)
	same("jsonexp", got, err)
	got, err = new(jsonexpDecoder).decode(line, true, false)
	same("jsonexp shared", got, err)
	got, err = agreeOracle.decode(line, true, true)
	same("jsonexp reuse", got, err)
}

// fuzzCorpus reads the committed corpus of a fuzz target whose input is
// one []byte.
func fuzzCorpus(t testing.TB, target string) [][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "[]byte(") {
			t.Fatalf("%s: not a one-[]byte corpus file", f)
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, []byte(s))
	}
	if len(out) == 0 {
		t.Fatalf("no corpus for %s", target)
	}
	return out
}

// TestTraceDecodersAgree runs the live decoder and the oracle on the
// generator's events (every benchmark shape, many awkward ones) and on the
// committed corpora of every trace fuzz target.
func TestTraceDecodersAgree(t *testing.T) {
	for _, shape := range benchShapes {
		src := gen.NewTraceSource(gen.Options{Seed: 11, Items: 500, Awkward: 0.3, Arms: []string{"live", "canary"}, Now: func() time.Time { return time.Unix(1756297822, 123456789) }})
		for range 2000 {
			line := src.Next()
			if shape.keys != nil {
				var err error
				if line, err = gen.Keep(line, shape.keys); err != nil {
					t.Fatal(err)
				}
			}
			checkAgree(t, line)
		}
	}
	for _, line := range fastTraceCases {
		checkAgree(t, []byte(line))
	}
	for _, target := range []string{"FuzzDecodeTrace", "FuzzDecodeTraceFast", "FuzzDecodeTraceJSONExp", "FuzzLiteTrace"} {
		for _, line := range fuzzCorpus(t, target) {
			checkAgree(t, line)
		}
	}
}

func FuzzDecodeTraceJSONExp(f *testing.F) {
	for _, line := range fastTraceCases {
		f.Add([]byte(line))
	}
	f.Fuzz(checkAgree)
}
