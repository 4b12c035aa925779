package wire

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// decodeTraceFast is the fast path of DecodeTrace for the live sidecar,
// where reflection cost most of the time of an event. It walks the bytes
// once, validating them as strictly as the reference decoder
// (decodeTraceReflect: json.Unmarshal of traceWire, then the checks):
// UTF-8, duplicate names at any depth, number grammar, nothing after the
// value. It handles the common shapes only, and says ok=false for anything
// else — every error, escaped names, \u escapes, embeddings, nulls inside
// lists, non-integer forms of integers, deep or wide nesting — so that the
// reference decides those, with its own error texts. When it says ok, the
// event is deep-equal to the reference's (FuzzDecodeTraceFast).
//
// It earns its keep only while it is at least 1.5x faster than a decoder
// on go-json-experiment's tokens, jsonexpDecoder in the tests
// (BenchmarkTraceDecodersPaired reports the ratio).
//
// Strings without escapes are substrings of one copy of the line (one
// allocation per event instead of one per string), except the qid, which
// the windows keep as a map key and so gets its own copy: a retained qid
// must not pin a whole message.
//
// With shared, that one copy is the line itself (DecodeTraceShared).
//
// With sc, the event's lists and citation offsets are sc's memory, reused
// by the next call, and the qid is not copied (DecodeTraceReuse).
func decodeTraceFast(line []byte, shared bool, sc *TraceScratch) (e TraceEvent, ok bool) {
	// Lists are read into one slice of strings and one of numbers for the
	// whole event: sc's, reused, or new ones the event keeps. (Reading them
	// on the stack and copying them out cost the copy, its write barriers
	// and the zeroing of the stack buffers on every event.)
	var strs []string
	var nums []float64
	if sc != nil {
		if sc.strs == nil {
			// Non-nil even when empty: a set, empty list is [], not nil.
			sc.strs, sc.nums = make([]string, 0, 16), make([]float64, 0, 16)
		}
		strs, nums = sc.strs[:0], sc.nums[:0]
	} else {
		strs, nums = make([]string, 0, 16), make([]float64, 0, 16)
	}
	p := fastParser{b: line, sc: sc}
	if shared && len(line) > 0 {
		p.s = unsafe.String(&line[0], len(line))
	}
	p.ws()
	if !p.eat('{') {
		return e, false
	}
	var (
		seen                        uint32
		unknown                     nameSet
		qid, qidAlias               *string
		qidS, qidAliasS             string
		ts, q, query                string
		lambda, lambdaAlias         string
		para, seed                  int
		havePara, haveSeed          bool
		retrieved                   span
		topk                        []TopKItem
		ds, dsAlias                 span
		ans                         fastAnswer
		haveAns                     bool
		dsCited, latency            float64
		haveDSCited, haveLatency    bool
		eventID, requestID, arm, ih string
	)
	p.ws()
	if p.peek() == '}' {
		p.i++
	} else {
		for {
			ns, ne, good := p.name()
			if !good {
				return e, false
			}
			name := p.b[ns:ne]
			var bit uint32
			switch string(name) {
			case "qid":
				bit = 1 << 0
				var set bool
				qidS, set, good = p.stringOrNull()
				if set {
					qid = &qidS
				}
			case "q_id":
				bit = 1 << 1
				var set bool
				qidAliasS, set, good = p.stringOrNull()
				if set {
					qidAlias = &qidAliasS
				}
			case "event_id":
				bit = 1 << 2
				eventID, _, good = p.stringOrNull()
			case "request_id":
				bit = 1 << 3
				requestID, _, good = p.stringOrNull()
			case "arm":
				bit = 1 << 4
				arm, _, good = p.stringOrNull()
			case "ts":
				bit = 1 << 5
				ts, _, good = p.stringOrNull()
			case "q":
				bit = 1 << 6
				q, _, good = p.stringOrNull()
			case "query":
				bit = 1 << 7
				query, _, good = p.stringOrNull()
			case "paraphrase":
				bit = 1 << 8
				para, havePara, good = p.intOrNull()
			case "seed":
				bit = 1 << 9
				seed, haveSeed, good = p.intOrNull()
			case "retrieved_ids":
				bit = 1 << 10
				strs, retrieved, good = p.strings(strs)
			case "topk":
				bit = 1 << 11
				topk, good = p.topK()
			case "delta_s":
				bit = 1 << 12
				nums, ds, good = p.floats(nums)
			case "ΔS":
				bit = 1 << 13
				nums, dsAlias, good = p.floats(nums)
			case "answer_json":
				bit = 1 << 14
				strs, haveAns, good = p.answer(&ans, strs)
			case "delta_s_cited":
				bit = 1 << 15
				dsCited, haveDSCited, good = p.floatOrNull()
			case "lambda_state":
				bit = 1 << 16
				lambda, _, good = p.stringOrNull()
			case "λ_state":
				bit = 1 << 17
				lambdaAlias, _, good = p.stringOrNull()
			case "embeddings":
				bit = 1 << 18
				good = p.null() // vectors: the reference decodes them
			case "index_hash":
				bit = 1 << 19
				ih, _, good = p.stringOrNull()
			case "latency_ms":
				bit = 1 << 20
				latency, haveLatency, good = p.floatOrNull()
			default:
				good = unknown.add(p.b, ns, ne) && p.skip(1)
			}
			if !good || seen&bit != 0 {
				return e, false
			}
			seen |= bit
			more, good := p.next('}')
			if !good {
				return e, false
			}
			if !more {
				break
			}
		}
	}
	p.ws()
	if p.i != len(p.b) {
		return e, false
	}

	// What decodeTraceReflect does with the wire values, failing where it
	// fails. The numbers get two more (ΔS cited, latency) without growing:
	// the event points at them.
	allStrs, allNums := strs, slices.Grow(nums, 2)
	if sc != nil {
		sc.strs, sc.nums = allStrs, allNums
	}
	e = TraceEvent{
		EventID:      eventID,
		RequestID:    requestID,
		Arm:          arm,
		Query:        q,
		Paraphrase:   -1,
		Seed:         -1,
		RetrievedIDs: retrieved.strings(allStrs),
		TopK:         topk,
		DeltaS:       ds.floats(allNums),
		LambdaState:  lambda,
		IndexHash:    ih,
		HasRetrieval: retrieved.set || topk != nil,
	}
	if haveDSCited {
		allNums = append(allNums, dsCited)
		e.DeltaSCited = &allNums[len(allNums)-1]
	}
	if haveLatency {
		allNums = append(allNums, latency)
		e.LatencyMS = &allNums[len(allNums)-1]
	}
	switch {
	case qid != nil && *qid != "":
		e.QID = *qid
	case qidAlias != nil && *qidAlias != "":
		e.QID = *qidAlias
	default:
		return TraceEvent{}, false
	}
	if sc == nil {
		e.QID = strings.Clone(e.QID)
	}
	if e.Query == "" {
		e.Query = query
	}
	if e.DeltaS == nil {
		e.DeltaS = dsAlias.floats(allNums)
	}
	if e.LambdaState == "" {
		e.LambdaState = lambdaAlias
	}
	if havePara {
		e.Paraphrase = para
	}
	if haveSeed {
		e.Seed = seed
	}
	if ts != "" {
		t, ok := parseUTC(ts)
		if !ok {
			var err error
			if t, err = time.Parse(time.RFC3339Nano, ts); err != nil {
				return TraceEvent{}, false
			}
		}
		e.TS = t
	}
	for i := range e.TopK {
		it := &e.TopK[i]
		if it.ID == "" || it.Offsets != nil && (it.Offsets[0] < 0 || it.Offsets[1] < it.Offsets[0]) || !validDotPath(it.SectionID) {
			return TraceEvent{}, false
		}
	}
	if e.DeltaSCited != nil && (*e.DeltaSCited < 0 || *e.DeltaSCited > 1) {
		return TraceEvent{}, false
	}
	for _, v := range e.DeltaS {
		if v < 0 || v > 1 {
			return TraceEvent{}, false
		}
	}
	if haveAns {
		e.HasAnswer = true
		if len(ans.offsets) > 0 { // most events have none: no map iterator
			for _, off := range ans.offsets {
				if off[0] < 0 || off[1] < off[0] {
					return TraceEvent{}, false
				}
			}
		}
		e.Answer = Answer{CitationOffsets: ans.offsets, Citations: ans.citations.strings(allStrs), CitationsNotList: ans.notList}
		e.Answer.Claim = ans.claim
	} else {
		e.Answer.Citations = []string{}
	}
	return e, true
}

// parseUTC reads the common form of ts, 2006-01-02T15:04:05[.1-9 digits]Z,
// as time.Parse(time.RFC3339Nano) does (the same ranges refused, the same
// time.Date in UTC made); ok is false for anything else.
func parseUTC(s string) (time.Time, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return time.Time{}, false
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hour, minute, sec := num(11, 2), num(14, 2), num(17, 2)
	if year < 0 || month < 1 || month > 12 || day < 1 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	if day > 28 && day > daysIn(year, month) {
		return time.Time{}, false
	}
	nsec := 0
	switch frac := s[19 : len(s)-1]; {
	case frac == "":
	case len(frac) < 2 || len(frac) > 10 || frac[0] != '.':
		return time.Time{}, false
	default:
		if nsec = num(20, len(frac)-1); nsec < 0 {
			return time.Time{}, false
		}
		for i := len(frac) - 1; i < 9; i++ {
			nsec *= 10
		}
	}
	// time.Unix(…).UTC() is the Time time.Date(…, time.UTC) makes; the
	// days are counted here because time.Date's general normalisation was
	// most of this function's cost.
	unix := daysSinceEpoch(year, month, day)*86400 + int64(hour*3600+minute*60+sec)
	return time.Unix(unix, int64(nsec)).UTC(), true
}

// daysIn is the number of days of month in year (proleptic Gregorian).
func daysIn(year, month int) int {
	if month == 2 {
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	}
	return 30 + (month+month/8)%2
}

// daysSinceEpoch is the day number of year-month-day from 1970-01-01
// (proleptic Gregorian; H. Hinnant's days_from_civil).
func daysSinceEpoch(year, month, day int) int64 {
	y := int64(year)
	if month <= 2 {
		y--
	}
	era := y
	if era < 0 {
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	m := int64(month)
	if m > 2 {
		m -= 3
	} else {
		m += 9
	}
	doy := (153*m+2)/5 + int64(day) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// validDotPath is checkDotPath without the error.
func validDotPath(p string) bool {
	if p == "" {
		return true
	}
	if p[0] == '.' || p[len(p)-1] == '.' {
		return false
	}
	for i := 1; i < len(p); i++ {
		if p[i] == '.' && p[i-1] == '.' {
			return false
		}
	}
	return true
}

// fastAnswer is answer_json as the fast path reads it.
type fastAnswer struct {
	claim     string
	citations span // set: [] or the ids; not set: nil (not a list)
	notList   bool
	offsets   map[string][2]int64
}

// span is a list read into the parser's scratch: strs or nums
// [start:end]. A list that is not set (null, absent) is nil; a set one is
// not, even when empty.
type span struct {
	start, end int
	set        bool
}

func (sp span) strings(all []string) []string {
	if !sp.set {
		return nil
	}
	return all[sp.start:sp.end:sp.end]
}

func (sp span) floats(all []float64) []float64 {
	if !sp.set {
		return nil
	}
	return all[sp.start:sp.end:sp.end]
}

// fastParser walks one JSON text. Every method returns false (good) when
// the input is not one it can vouch for.
type fastParser struct {
	b  []byte
	s  string // the line as a string, made on the first string value
	i  int
	sc *TraceScratch // nil: allocate
}

// TraceScratch is memory that DecodeTraceReuse reuses from one event to
// the next: the event's lists and its citation offsets. The zero value is
// ready; one goroutine at a time.
type TraceScratch struct {
	strs    []string
	nums    []float64
	offsets map[string][2]int64
}

// substr is the text of b[start:end] as a string: a substring of the line
// when the line is shared, else a copy.
func (p *fastParser) substr(start, end int) string {
	if p.s != "" {
		return p.s[start:end]
	}
	return string(p.b[start:end])
}

// ws skips whitespace. Events are usually compact JSON: one comparison
// when there is none (12 % of the decode went to the general loop).
func (p *fastParser) ws() {
	if p.i < len(p.b) && p.b[p.i] > ' ' {
		return
	}
	p.wsLoop()
}

//go:noinline (rare: keeps ws small enough to inline everywhere)
func (p *fastParser) wsLoop() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastParser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *fastParser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// next is called after a member or element: it reads the separator and
// says whether another member follows (false: the closing byte was read).
func (p *fastParser) next(closing byte) (more, good bool) {
	p.ws()
	switch p.peek() {
	case ',':
		p.i++
		p.ws()
		return true, true
	case closing:
		p.i++
		return false, true
	}
	return false, false
}

// name reads a member name and its colon, leaving the parser at the value.
// Escaped names are left to the reference (it unescapes before matching
// and before looking for duplicates).
func (p *fastParser) name() (start, end int, good bool) {
	// Names are short and nearly always plain ASCII: a table scan to the
	// closing quote, the general scan for anything else (ΔS, λ_state).
	quick := false
	if b := p.b; p.i < len(b) && b[p.i] == '"' {
		j := p.i + 1
		for j < len(b) && plain[b[j]] {
			j++
		}
		if j < len(b) && b[j] == '"' {
			start, end, quick = p.i+1, j, true
			p.i = j + 1
		}
	}
	if !quick {
		var esc bool
		start, end, esc, good = p.rawString()
		if !good || esc {
			return 0, 0, false
		}
	}
	p.ws()
	if !p.eat(':') {
		return 0, 0, false
	}
	p.ws()
	return start, end, true
}

// rawString scans a string at p.i and returns the bounds of its contents.
// It refuses control characters, invalid UTF-8 and \u escapes (the
// reference has rules for surrogates); other escapes are checked here.
func (p *fastParser) rawString() (start, end int, esc, good bool) {
	if !p.eat('"') {
		return 0, 0, false, false
	}
	b := p.b
	start = p.i
	ascii := true
	for j := p.i; j < len(b); {
		// Eight bytes at a time: the lowest flagged byte (a quote, a
		// backslash, a control character or not ASCII) is the first such
		// byte of the eight (the borrows of the test only flag bytes after
		// it), so the scan jumps straight to it.
		for j+8 <= len(b) {
			const ones, highs = 0x0101010101010101, 0x8080808080808080
			x := binary.LittleEndian.Uint64(b[j:])
			q, bs := x^(ones*'"'), x^(ones*'\\')
			if m := ((x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs | x) & highs; m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
			j += 8
		}
		for stop := min(j+8, len(b)); j < stop; j++ {
			c := b[j]
			if plain[c] {
				continue
			}
			switch {
			case c == '"':
				if !ascii && !utf8.Valid(b[start:j]) {
					return 0, 0, false, false
				}
				p.i = j + 1
				return start, j, esc, true
			case c == '\\':
				if j+1 >= len(b) {
					return 0, 0, false, false
				}
				switch b[j+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				default:
					return 0, 0, false, false
				}
				esc = true
				j++
			case c < 0x20:
				return 0, 0, false, false
			default: // not ASCII
				ascii = false
			}
		}
	}
	return 0, 0, false, false
}

// plain are the bytes that need no attention inside a string.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string value.
func (p *fastParser) str() (string, bool) {
	start, end, esc, good := p.rawString()
	if !good {
		return "", false
	}
	if !esc {
		if start == end {
			return "", true
		}
		if p.s == "" {
			p.s = string(p.b)
		}
		return p.s[start:end], true
	}
	out := make([]byte, 0, end-start)
	for j := start; j < end; j++ {
		c := p.b[j]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		j++
		switch p.b[j] {
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default: // " \ /
			c = p.b[j]
		}
		out = append(out, c)
	}
	return string(out), true
}

func (p *fastParser) null() bool {
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

func (p *fastParser) stringOrNull() (s string, set, good bool) {
	switch p.peek() {
	case '"':
		s, good = p.str()
		return s, good, good
	case 'n':
		return "", false, p.null()
	}
	return "", false, false
}

// number scans a JSON number and returns its text.
func (p *fastParser) number() (start, end int, integer, good bool) {
	start = p.i
	j := p.i
	if j < len(p.b) && p.b[j] == '-' {
		j++
	}
	switch {
	case j < len(p.b) && p.b[j] == '0':
		j++
	case j < len(p.b) && p.b[j] >= '1' && p.b[j] <= '9':
		for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
			j++
		}
	default:
		return 0, 0, false, false
	}
	integer = true
	if j < len(p.b) && p.b[j] == '.' {
		integer = false
		j++
		k := j
		for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
			j++
		}
		if j == k {
			return 0, 0, false, false
		}
	}
	if j < len(p.b) && (p.b[j] == 'e' || p.b[j] == 'E') {
		integer = false
		j++
		if j < len(p.b) && (p.b[j] == '+' || p.b[j] == '-') {
			j++
		}
		k := j
		for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
			j++
		}
		if j == k {
			return 0, 0, false, false
		}
	}
	p.i = j
	return start, j, integer, true
}

// integer reads a plain integer of at most 18 digits (no fraction, no
// exponent, not -0): the forms whose value is beyond doubt.
func (p *fastParser) integer() (int64, bool) {
	start, end, integer, good := p.number()
	if !good || !integer {
		return 0, false
	}
	neg := p.b[start] == '-'
	if neg {
		start++
	}
	if end-start > 18 || neg && p.b[start] == '0' {
		return 0, false
	}
	var v int64
	for _, c := range p.b[start:end] {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func (p *fastParser) intOrNull() (v int, set, good bool) {
	if p.peek() == 'n' {
		return 0, false, p.null()
	}
	n, good := p.integer()
	return int(n), good, good
}

func (p *fastParser) float() (float64, bool) {
	if f, ok := p.shortDecimal(); ok {
		return f, true
	}
	start, end, _, good := p.number()
	if !good {
		return 0, false
	}
	if f, ok := exactDecimal(p.b[start:end]); ok {
		return f, true
	}
	if p.s == "" {
		p.s = string(p.b)
	}
	f, err := strconv.ParseFloat(p.s[start:end], 64)
	return f, err == nil
}

// shortDecimal reads, in one pass, the common form of a ΔS or latency: a
// number without exponent of at most 15 significant digits and 22
// decimals, whose value exactDecimal computes exactly (the mantissa is
// below 2^53). Anything else (an exponent, more digits, or not a number)
// leaves p where it was and says false, for float's general path, which
// then decides exactly as before.
func (p *fastParser) shortDecimal() (float64, bool) {
	b, j := p.b, p.i
	neg := j < len(b) && b[j] == '-'
	if neg {
		j++
	}
	var mant uint64
	sig := 0 // significant digits: those from the first non-zero one
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case j < len(b) && b[j] >= '1' && b[j] <= '9':
		for ; j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
			mant = mant*10 + uint64(b[j]-'0')
			sig++
		}
	default:
		return 0, false
	}
	scale := 0
	if j < len(b) && b[j] == '.' {
		j++
		k := j
		for ; j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
			mant = mant*10 + uint64(b[j]-'0')
			if mant != 0 {
				sig++
			}
		}
		scale = j - k
		if scale == 0 {
			return 0, false
		}
	}
	if sig > 15 || scale >= len(pow10) || j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		return 0, false
	}
	f := float64(mant) / pow10[scale]
	if neg {
		f = -f
	}
	p.i = j
	return f, true
}

// pow10 are the powers of ten that float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// exactDecimal converts a JSON number without exponent whose digits fit in
// 2^53, with at most 22 after the point: mantissa and power of ten are then
// exact in float64 and one division rounds correctly, so the result is
// ParseFloat's (the same fast path strconv takes). ok is false otherwise.
func exactDecimal(b []byte) (float64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	var mant uint64
	frac, digits := -1, 0
	for i, c := range b {
		switch {
		case c >= '0' && c <= '9':
			if digits == 19 {
				return 0, false
			}
			mant = mant*10 + uint64(c-'0')
			if mant != 0 {
				digits++
			}
		case c == '.':
			frac = i
		default: // an exponent
			return 0, false
		}
	}
	scale := 0
	if frac >= 0 {
		scale = len(b) - frac - 1
	}
	if mant >= 1<<53 || scale >= len(pow10) {
		return 0, false
	}
	f := float64(mant) / pow10[scale]
	if neg {
		f = -f
	}
	return f, true
}

func (p *fastParser) floatOrNull() (f float64, set, good bool) {
	if p.peek() == 'n' {
		return 0, false, p.null()
	}
	f, good = p.float()
	return f, good, good
}

// strings reads an array of strings onto the end of strs.
func (p *fastParser) strings(strs []string) ([]string, span, bool) {
	sp := span{start: len(strs), end: len(strs)}
	if p.peek() == 'n' {
		return strs, sp, p.null()
	}
	if !p.eat('[') {
		return strs, sp, false
	}
	sp.set = true
	p.ws()
	if p.eat(']') {
		return strs, sp, true
	}
	for {
		if p.peek() != '"' {
			return strs, sp, false
		}
		s, good := p.str()
		if !good {
			return strs, sp, false
		}
		strs = append(strs, s)
		more, good := p.next(']')
		if !good {
			return strs, sp, false
		}
		if !more {
			sp.end = len(strs)
			return strs, sp, true
		}
	}
}

// floats reads an array of numbers onto the end of nums.
func (p *fastParser) floats(nums []float64) ([]float64, span, bool) {
	sp := span{start: len(nums), end: len(nums)}
	if p.peek() == 'n' {
		return nums, sp, p.null()
	}
	if !p.eat('[') {
		return nums, sp, false
	}
	sp.set = true
	p.ws()
	if p.eat(']') {
		return nums, sp, true
	}
	for {
		f, good := p.float()
		if !good {
			return nums, sp, false
		}
		nums = append(nums, f)
		more, good := p.next(']')
		if !good {
			return nums, sp, false
		}
		if !more {
			sp.end = len(nums)
			return nums, sp, true
		}
	}
}

// pair reads [start,end] as two plain integers.
func (p *fastParser) pair() (v [2]int64, good bool) {
	if !p.eat('[') {
		return v, false
	}
	p.ws()
	if v[0], good = p.integer(); !good {
		return v, false
	}
	p.ws()
	if !p.eat(',') {
		return v, false
	}
	p.ws()
	if v[1], good = p.integer(); !good {
		return v, false
	}
	p.ws()
	return v, p.eat(']')
}

// topK reads the ranked items (null: nil; []: empty, not nil).
func (p *fastParser) topK() ([]TopKItem, bool) {
	if p.peek() == 'n' {
		return nil, p.null()
	}
	if !p.eat('[') {
		return nil, false
	}
	p.ws()
	if p.eat(']') {
		return []TopKItem{}, true
	}
	var (
		buf     [16]TopKItem
		scores  [16]float64
		offsets [16][2]int64
		has     [16]uint8 // bit 0: score, bit 1: offsets
	)
	items := buf[:0]
	for {
		if len(items) == len(buf) {
			return nil, false // long lists are rare: the reference takes them
		}
		n := len(items)
		items = append(items, TopKItem{})
		it := &items[n]
		if !p.eat('{') {
			return nil, false
		}
		p.ws()
		if !p.eat('}') {
			var seen uint8
			var unknown nameSet
			for {
				ns, ne, good := p.name()
				if !good {
					return nil, false
				}
				var bit uint8
				switch string(p.b[ns:ne]) {
				case "id":
					bit = 1 << 0
					it.ID, _, good = p.stringOrNull()
				case "score":
					bit = 1 << 1
					var set bool
					scores[n], set, good = p.floatOrNull()
					if set {
						has[n] |= 1
					}
				case "section_id":
					bit = 1 << 2
					it.SectionID, _, good = p.stringOrNull()
				case "type":
					bit = 1 << 3
					it.Type, _, good = p.stringOrNull()
				case "offsets":
					bit = 1 << 4
					if p.peek() == 'n' {
						good = p.null()
					} else if offsets[n], good = p.pair(); good {
						has[n] |= 2
					}
				case "text":
					bit = 1 << 5
					it.Text, _, good = p.stringOrNull()
				default:
					good = unknown.add(p.b, ns, ne) && p.skip(2)
				}
				if !good || seen&bit != 0 {
					return nil, false
				}
				seen |= bit
				more, good := p.next('}')
				if !good {
					return nil, false
				}
				if !more {
					break
				}
			}
		}
		more, good := p.next(']')
		if !good {
			return nil, false
		}
		if !more {
			break
		}
	}
	out := append([]TopKItem(nil), items...)
	pointScores(out, has[:], scores[:], offsets[:])
	return out, true
}

// pointScores points items at their scores and offsets, has[i] saying
// which item i has (bit 0: score, bit 1: offsets): one allocation for all
// the scores and one for all the offsets.
func pointScores(items []TopKItem, has []uint8, scores []float64, offsets [][2]int64) {
	var nScores, nOffsets int
	for i := range items {
		nScores += int(has[i] & 1)
		nOffsets += int(has[i] >> 1 & 1)
	}
	var sc []float64
	var of [][2]int64
	if nScores > 0 {
		sc = make([]float64, 0, nScores)
	}
	if nOffsets > 0 {
		of = make([][2]int64, 0, nOffsets)
	}
	for i := range items {
		if has[i]&1 != 0 {
			sc = append(sc, scores[i])
			items[i].Score = &sc[len(sc)-1]
		}
		if has[i]&2 != 0 {
			of = append(of, offsets[i])
			items[i].Offsets = &of[len(of)-1]
		}
	}
}

// answer reads answer_json, its citations onto the end of strs; set is
// false for null.
func (p *fastParser) answer(a *fastAnswer, strs []string) (_ []string, set, good bool) {
	if p.peek() == 'n' {
		return strs, false, p.null()
	}
	if !p.eat('{') {
		return strs, false, false
	}
	*a = fastAnswer{citations: span{start: len(strs), end: len(strs), set: true}}
	p.ws()
	if p.eat('}') {
		return strs, true, true
	}
	var seen uint8
	var unknown nameSet
	for {
		ns, ne, good := p.name()
		if !good {
			return strs, false, false
		}
		var bit uint8
		switch string(p.b[ns:ne]) {
		case "claim":
			bit = 1 << 0
			a.claim, _, good = p.stringOrNull()
		case "citations":
			bit = 1 << 1
			strs, good = p.citations(a, strs)
		case "citation_offsets":
			bit = 1 << 2
			a.offsets, good = p.offsetMap()
		default:
			good = unknown.add(p.b, ns, ne) && p.skip(2)
		}
		if !good || seen&bit != 0 {
			return strs, false, false
		}
		seen |= bit
		more, good := p.next('}')
		if !good {
			return strs, false, false
		}
		if !more {
			return strs, true, true
		}
	}
}

// citations applies citationsOf's truthiness rule to the value at p.i.
func (p *fastParser) citations(a *fastAnswer, strs []string) ([]string, bool) {
	a.citations, a.notList = span{start: len(strs), end: len(strs), set: true}, false
	if p.peek() == '[' {
		var good bool
		strs, a.citations, good = p.strings(strs)
		return strs, good
	}
	start := p.i
	if !p.skip(2) {
		return strs, false
	}
	if Truthy(jsontext.Value(p.b[start:p.i])) {
		a.citations.set, a.notList = false, true
	}
	return strs, true
}

// offsetMap reads citation_offsets (null: nil; {}: empty, not nil).
func (p *fastParser) offsetMap() (map[string][2]int64, bool) {
	if p.peek() == 'n' {
		return nil, p.null()
	}
	if !p.eat('{') {
		return nil, false
	}
	var m map[string][2]int64
	if p.sc != nil {
		if p.sc.offsets == nil {
			p.sc.offsets = map[string][2]int64{}
		}
		m = p.sc.offsets
		clear(m)
	} else {
		m = map[string][2]int64{}
	}
	p.ws()
	if p.eat('}') {
		return m, true
	}
	for {
		ns, ne, good := p.name()
		if !good {
			return nil, false
		}
		if _, dup := m[string(p.b[ns:ne])]; dup {
			return nil, false
		}
		v, good := p.pair()
		if !good {
			return nil, false
		}
		m[p.substr(ns, ne)] = v
		more, good := p.next('}')
		if !good {
			return nil, false
		}
		if !more {
			return m, true
		}
	}
}

// maxSkipDepth bounds the nesting of values the fast path skips.
const maxSkipDepth = 32

// skip validates and passes over any value, refusing duplicate names in
// its objects.
func (p *fastParser) skip(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	switch c := p.peek(); {
	case c == '"':
		_, _, _, good := p.rawString()
		return good
	case c == 'n':
		return p.null()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == '-' || c >= '0' && c <= '9':
		_, _, _, good := p.number()
		return good
	case c == '[':
		p.i++
		p.ws()
		if p.eat(']') {
			return true
		}
		for {
			if !p.skip(depth + 1) {
				return false
			}
			more, good := p.next(']')
			if !good {
				return false
			}
			if !more {
				return true
			}
		}
	case c == '{':
		p.i++
		p.ws()
		if p.eat('}') {
			return true
		}
		var names nameSet
		for {
			ns, ne, good := p.name()
			if !good || !names.add(p.b, ns, ne) || !p.skip(depth+1) {
				return false
			}
			more, good := p.next('}')
			if !good {
				return false
			}
			if !more {
				return true
			}
		}
	}
	return false
}

func (p *fastParser) literal(lit string) bool {
	if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
		p.i += len(lit)
		return true
	}
	return false
}

// nameSet finds duplicate names among the unknown members of one object.
// It holds a few; more is rare and left to the reference.
type nameSet struct {
	n     int
	spans [12][2]int32
}

// add records b[start:end]; false when it is a repeat or the set is full.
func (s *nameSet) add(b []byte, start, end int) bool {
	name := b[start:end]
	for _, sp := range s.spans[:s.n] {
		if string(b[sp[0]:sp[1]]) == string(name) {
			return false
		}
	}
	if s.n == len(s.spans) {
		return false
	}
	s.spans[s.n] = [2]int32{int32(start), int32(end)}
	s.n++
	return true
}
