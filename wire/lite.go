package wire

import (
	"bytes"
	"io"
	"strconv"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// The offline scorer reads four fields of a trace and four of a gold item
// from files of a million lines; decoding whole events through reflection
// costs it most of its time. LiteDecoder walks the tokens instead, reads
// only those fields (with the same type rules as DecodeTrace and DecodeGold)
// and skips the rest, still checking that every line is well-formed JSON:
// invalid UTF-8, duplicate names, NaN and trailing data are refused as
// before, except that a repeated name is allowed, the last one winning
// (whole values, not merged), as Python's json module has it.

// TraceLite is what the seed 002 scorer reads of a trace line.
type TraceLite struct {
	QID              string
	RetrievedIDs     []string // nil when missing or null
	Claim            string
	Citations        []string // [] when missing, null or falsy
	CitationsNotList bool
}

// GoldLite is what the seed 002 scorer reads of a gold line.
type GoldLite struct {
	QID             string
	Answerable      bool
	GoldClaimSubstr []string // nil when missing or null
	GoldCitations   []string
}

// LiteDecoder decodes TraceLite and GoldLite values. It is not safe for
// concurrent use; keep one per goroutine.
type LiteDecoder struct {
	// Borrow makes the strings of a result share memory with the decoder:
	// they are valid only until its next call, and cost no allocation.
	// Otherwise they are copied into arena chunks that many strings share.
	Borrow bool

	dec     *jsontext.Decoder
	scratch []byte   // unescaped strings of the current line, when borrowing
	lists   []string // backing of the current line's string lists, when borrowing
	arena   []byte
}

// arenaChunk is the size of the blocks that copied strings share: one
// allocation serves hundreds of lines.
const arenaChunk = 64 << 10

// NewLiteDecoder returns a decoder ready for use.
func NewLiteDecoder() *LiteDecoder {
	return &LiteDecoder{dec: jsontext.NewDecoder(bytes.NewReader(nil), liteOptions)}
}

// liteOptions: repeated names are resolved by the member callbacks, which
// overwrite, so tracking names in the decoder would be wasted work.
var liteOptions = jsontext.AllowDuplicateNames(true)

func (d *LiteDecoder) reset(line []byte) {
	d.scratch, d.lists = d.scratch[:0], d.lists[:0]
	// A bytes.Buffer is parsed in place, without a copy.
	d.dec.Reset(bytes.NewBuffer(line), liteOptions)
}

// Trace decodes one trace line into t.
func (d *LiteDecoder) Trace(line []byte, t *TraceLite) error {
	*t = TraceLite{Citations: []string{}}
	d.reset(line)
	var qid, qidAlias string
	err := d.object("", func(name string) error {
		var err error
		switch name {
		case "qid":
			qid, _, err = d.stringOrNull("qid")
		case "q_id":
			qidAlias, _, err = d.stringOrNull("q_id")
		case "retrieved_ids":
			t.RetrievedIDs, err = d.strings("retrieved_ids")
		case "answer_json":
			t.Claim, t.Citations, t.CitationsNotList = "", []string{}, false
			if d.dec.PeekKind() == 'n' {
				return d.dec.SkipValue()
			}
			return d.object("answer_json", func(name string) error {
				var err error
				switch name {
				case "claim":
					t.Claim, _, err = d.stringOrNull("answer_json.claim")
				case "citations":
					t.Citations, t.CitationsNotList, err = d.citations()
				default:
					err = d.skip()
				}
				return err
			})
		default:
			err = d.skip()
		}
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case qid != "":
		t.QID = qid
	case qidAlias != "":
		t.QID = qidAlias
	default:
		return fieldErr("qid", "required (a non-empty string, or q_id)")
	}
	return nil
}

// Gold decodes one gold line into g.
func (d *LiteDecoder) Gold(line []byte, g *GoldLite) error {
	*g = GoldLite{}
	d.reset(line)
	var haveQID, haveAnswerable bool
	err := d.object("", func(name string) error {
		var err error
		switch name {
		case "qid":
			g.QID, haveQID, err = d.stringOrNull("qid")
		case "answerable":
			g.Answerable, haveAnswerable, err = d.boolOrNull("answerable")
		case "gold_claim_substr":
			g.GoldClaimSubstr, err = d.strings("gold_claim_substr")
		case "gold_citations":
			g.GoldCitations, err = d.strings("gold_citations")
		default:
			err = d.skip()
		}
		return err
	})
	switch {
	case err != nil:
		return err
	case !haveQID:
		return fieldErr("qid", "required")
	case g.QID == "":
		return fieldErr("qid", "must not be empty")
	case !haveAnswerable:
		return fieldErr("answerable", "required (true or false)")
	}
	return nil
}

// object reads one JSON object, calling member for each name with the
// decoder positioned at its value; at top level it also requires the end of
// input.
func (d *LiteDecoder) object(field string, member func(name string) error) error {
	tok, err := d.dec.ReadToken()
	if err != nil {
		return d.syntax(err)
	}
	if tok.Kind() != '{' {
		return fieldErr(field, "want an object, got %s", KindName(tok.Kind()))
	}
	for d.dec.PeekKind() != '}' {
		name, err := d.dec.ReadValue()
		if err != nil {
			return d.syntax(err)
		}
		if err := member(d.unquote(name)); err != nil {
			return err
		}
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return d.syntax(err)
	}
	if field == "" {
		if _, err := d.dec.ReadToken(); err != io.EOF {
			if err == nil {
				return &FieldError{Msg: "invalid JSON: data after the top-level value"}
			}
			return d.syntax(err)
		}
	}
	return nil
}

func (d *LiteDecoder) skip() error {
	if err := d.dec.SkipValue(); err != nil {
		return d.syntax(err)
	}
	return nil
}

func (d *LiteDecoder) syntax(err error) error { return asFieldError(err) }

// unquote turns a raw JSON string into its text.
func (d *LiteDecoder) unquote(raw jsontext.Value) string {
	text := []byte(raw[1 : len(raw)-1])
	if bytes.IndexByte(raw, '\\') >= 0 {
		start := len(d.scratch)
		d.scratch, _ = jsontext.AppendUnquote(d.scratch, raw) // already validated by the decoder
		text = d.scratch[start:]
		if d.Borrow {
			// Later appends may move scratch; this string keeps the old
			// array alive, which is what it needs.
			return unsafe.String(unsafe.SliceData(text), len(text))
		}
	}
	if len(text) == 0 {
		return ""
	}
	if d.Borrow {
		return unsafe.String(unsafe.SliceData(text), len(text))
	}
	if len(text) > arenaChunk/8 {
		return string(text)
	}
	if cap(d.arena)-len(d.arena) < len(text) {
		d.arena = make([]byte, 0, arenaChunk)
	}
	start := len(d.arena)
	d.arena = append(d.arena, text...)
	// The arena is never written again below len, so the string is immutable.
	return unsafe.String(&d.arena[start], len(text))
}

func (d *LiteDecoder) value(field string) (jsontext.Value, error) {
	v, err := d.dec.ReadValue()
	if err != nil {
		return nil, d.syntax(err)
	}
	return v, nil
}

func (d *LiteDecoder) stringOrNull(field string) (string, bool, error) {
	v, err := d.value(field)
	if err != nil {
		return "", false, err
	}
	switch v.Kind() {
	case '"':
		return d.unquote(v), true, nil
	case 'n':
		return "", false, nil
	}
	return "", false, fieldErr(field, "want a string, got %s", KindName(v.Kind()))
}

func (d *LiteDecoder) boolOrNull(field string) (bool, bool, error) {
	v, err := d.value(field)
	if err != nil {
		return false, false, err
	}
	switch v.Kind() {
	case 't':
		return true, true, nil
	case 'f':
		return false, true, nil
	case 'n':
		return false, false, nil
	}
	return false, false, fieldErr(field, "want a bool, got %s", KindName(v.Kind()))
}

// strings reads an array of strings; null gives nil, [] an empty slice.
func (d *LiteDecoder) strings(field string) ([]string, error) {
	tok, err := d.dec.ReadToken()
	if err != nil {
		return nil, d.syntax(err)
	}
	switch tok.Kind() {
	case 'n':
		return nil, nil
	case '[':
	default:
		return nil, fieldErr(field, "want an array, got %s", KindName(tok.Kind()))
	}
	out := []string{}
	start := len(d.lists)
	for i := 0; d.dec.PeekKind() != ']'; i++ {
		v, err := d.value(field)
		if err != nil {
			return nil, err
		}
		if v.Kind() != '"' {
			return nil, fieldErr(field+"."+strconv.Itoa(i), "want a string, got %s", KindName(v.Kind()))
		}
		if d.Borrow {
			d.lists = append(d.lists, d.unquote(v))
		} else {
			out = append(out, d.unquote(v))
		}
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return nil, d.syntax(err)
	}
	if d.Borrow && len(d.lists) > start {
		// Later appends may move lists; this slice keeps its array.
		return d.lists[start:len(d.lists):len(d.lists)], nil
	}
	return out, nil
}

// citations applies the same truthiness rule as DecodeTrace.
func (d *LiteDecoder) citations() ([]string, bool, error) {
	if d.dec.PeekKind() == '[' {
		ids, err := d.strings("answer_json.citations")
		return ids, false, err
	}
	v, err := d.value("answer_json.citations")
	if err != nil {
		return nil, false, err
	}
	if Truthy(v) {
		return nil, true, nil
	}
	return []string{}, false, nil
}
