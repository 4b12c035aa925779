package wire

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"

	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/shadoweval/shadoweval/wire/gen"
)

// DecodeTrace has a fast path (decodeTraceFast) in front of the reflection
// decoder (decodeTraceReflect), which is the reference: for every input,
// DecodeTrace must give the reference's event or the reference's error
// text, and whenever the fast path answers by itself its event must be the
// reference's.

var testScratch TraceScratch

func checkFastTrace(t *testing.T, line []byte) (fast bool) {
	t.Helper()
	want, wantErr := decodeTraceReflect(line)
	got, gotErr := DecodeTrace(line)
	switch {
	case (gotErr == nil) != (wantErr == nil):
		t.Fatalf("%q: DecodeTrace error %v, reference %v", line, gotErr, wantErr)
	case gotErr != nil && gotErr.Error() != wantErr.Error():
		t.Fatalf("%q: DecodeTrace error %q, reference %q", line, gotErr, wantErr)
	case !reflect.DeepEqual(got, want):
		t.Fatalf("%q:\nDecodeTrace %#v\nreference   %#v", line, got, want)
	}
	e, ok := decodeTraceFast(line, false, nil)
	if shared, sharedOK := decodeTraceFast(line, true, nil); sharedOK != ok || !reflect.DeepEqual(shared, e) {
		t.Fatalf("%q: shared decoding differs: %v %#v", line, sharedOK, shared)
	}
	// The scratch is shared by every case, so what one event left in it
	// must not show in the next.
	if got, err := DecodeTraceReuse(line, &testScratch); (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: DecodeTraceReuse = %#v, %v; reference %v", line, got, err, wantErr)
	} else if d := got.Detached(); !reflect.DeepEqual(d, want) {
		t.Fatalf("%q: Detached = %#v; reference %#v", line, d, want)
	}
	if got, err := DecodeTraceShared(line); (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: DecodeTraceShared = %#v, %v; reference %v", line, got, err, wantErr)
	}
	if !ok {
		return false
	}
	if wantErr != nil {
		t.Fatalf("%q: the fast path accepted what the reference refuses: %v", line, wantErr)
	}
	if !reflect.DeepEqual(e, want) {
		t.Fatalf("%q:\nfast      %#v\nreference %#v", line, e, want)
	}
	return true
}

// fastTraceCases are edge cases for both paths; the fuzz corpus starts from
// them too.
var fastTraceCases = []string{
	`{"qid":"A0001","q":"Does X support null keys?","retrieved_ids":["p1#1","p1#2"],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}`,
	`{}`, `{"qid":""}`, `{"qid":null,"q_id":"B"}`, `{"qid":"","q_id":"B"}`, `{"q_id":"","qid":"A"}`,
	` { "qid" : "A" , "ts" : "2025-08-27T12:30:22Z" } ` + "\n\t\r",
	`{"qid":"A","ts":"2025-08-27T12:30:22.123456789+02:00"}`,
	`{"qid":"A","ts":"2025-02-30T12:30:22Z"}`, `{"qid":"A","ts":"2025-08-27 12:30:22Z"}`, `{"qid":"A","ts":null}`, `{"qid":"A","ts":""}`,
	`{"qid":"A","qid":"B"}`, `{"qid":"A","x":1,"x":2}`, `{"qid":"A","x":{"a":1,"a":2}}`, `{"qid":"A","x":[{"a":1},{"a":2}]}`,
	`{"QID":"A"}`, `{"qid":"A","Arm":"x","ARM":"y"}`, `{"\u0071id":"A"}`, `{"qid":"A\u00e9"}`, `{"qid":"A\ud800"}`, `{"qid":"A\"b\\c\/d\n"}`,
	"{\"qid\":\"A\xff\"}", "{\"qid\":\"A\x01\"}", "{\"qid\":\"é→\"}", "{\"qid\":\"A\",\"\xff\":1}",
	`{"qid":"A","retrieved_ids":[]}`, `{"qid":"A","retrieved_ids":null}`, `{"qid":"A","retrieved_ids":["a",null]}`, `{"qid":"A","retrieved_ids":["a",1]}`, `{"qid":"A","retrieved_ids":"a"}`,
	`{"qid":"A","topk":[]}`, `{"qid":"A","topk":null}`, `{"qid":"A","topk":[null]}`, `{"qid":"A","topk":[{"id":"x"},{}]}`,
	`{"qid":"A","topk":[{"id":"x","score":0.5,"section_id":"S.1.2","type":"code","offsets":[1,5],"text":"t","extra":[1,{"b":null}]}]}`,
	`{"qid":"A","topk":[{"id":"x","offsets":[5,1]}]}`, `{"qid":"A","topk":[{"id":"x","offsets":[-1,1]}]}`, `{"qid":"A","topk":[{"id":"x","offsets":[1]}]}`,
	`{"qid":"A","topk":[{"id":"x","offsets":[1,2,3]}]}`, `{"qid":"A","topk":[{"id":"x","offsets":[1.0,2]}]}`, `{"qid":"A","topk":[{"id":"x","offsets":null,"score":null}]}`,
	`{"qid":"A","topk":[{"id":"x","section_id":"S..1"}]}`, `{"qid":"A","topk":[{"id":"x","section_id":".S"}]}`, `{"qid":"A","topk":[{"id":"x","section_id":"S."}]}`, `{"qid":"A","topk":[{"id":"x","section_id":"."}]}`,
	`{"qid":"A","topk":[{"id":"x","id":"y"}]}`, `{"qid":"A","topk":[{"id":"x","ID":"y"}]}`,
	`{"qid":"A","delta_s":[0,1,0.5,1e-3,-0,0E0]}`, `{"qid":"A","delta_s":[1.5]}`, `{"qid":"A","delta_s":[]}`, `{"qid":"A","ΔS":[0.2]}`, `{"qid":"A","delta_s":null,"ΔS":[0.2]}`, `{"qid":"A","delta_s":[0.1],"ΔS":[0.2]}`,
	`{"qid":"A","delta_s":[01]}`, `{"qid":"A","delta_s":[1.]}`, `{"qid":"A","delta_s":[.5]}`, `{"qid":"A","delta_s":[1e]}`, `{"qid":"A","delta_s":[NaN]}`, `{"qid":"A","delta_s":[null]}`,
	`{"qid":"A","delta_s_cited":0.3,"latency_ms":12.5}`, `{"qid":"A","delta_s_cited":1.01}`, `{"qid":"A","latency_ms":1e999}`, `{"qid":"A","latency_ms":-1e-999}`, `{"qid":"A","delta_s_cited":null,"latency_ms":null}`,
	`{"qid":"A","paraphrase":2,"seed":-7}`, `{"qid":"A","paraphrase":-0}`, `{"qid":"A","paraphrase":1.0}`, `{"qid":"A","paraphrase":1e2}`, `{"qid":"A","seed":9223372036854775807}`, `{"qid":"A","seed":99999999999999999999}`, `{"qid":"A","seed":null}`,
	`{"qid":"A","answer_json":null}`, `{"qid":"A","answer_json":{}}`, `{"qid":"A","answer_json":[]}`, `{"qid":"A","answer_json":{"claim":null}}`, `{"qid":"A","answer_json":{"claim":3}}`,
	`{"qid":"A","answer_json":{"citations":[]}}`, `{"qid":"A","answer_json":{"citations":null}}`, `{"qid":"A","answer_json":{"citations":{}}}`, `{"qid":"A","answer_json":{"citations":{"a":1}}}`,
	`{"qid":"A","answer_json":{"citations":0}}`, `{"qid":"A","answer_json":{"citations":-0.0}}`, `{"qid":"A","answer_json":{"citations":1}}`, `{"qid":"A","answer_json":{"citations":1e999}}`,
	`{"qid":"A","answer_json":{"citations":""}}`, `{"qid":"A","answer_json":{"citations":"p1"}}`, `{"qid":"A","answer_json":{"citations":true}}`, `{"qid":"A","answer_json":{"citations":false}}`,
	`{"qid":"A","answer_json":{"citations":["x",["y"]]}}`, `{"qid":"A","answer_json":{"citations":["x",null]}}`, `{"qid":"A","answer_json":{"citations":[ ]}}`,
	`{"qid":"A","answer_json":{"claim":"c","citations":["p1"],"citation_offsets":{"p1":[1,2]}}}`, `{"qid":"A","answer_json":{"citation_offsets":{}}}`, `{"qid":"A","answer_json":{"citation_offsets":null}}`,
	`{"qid":"A","answer_json":{"citation_offsets":{"p1":[2,1]}}}`, `{"qid":"A","answer_json":{"citation_offsets":{"p1":[1,2],"p1":[1,2]}}}`, `{"qid":"A","answer_json":{"claim":"a","claim":"b"}}`,
	`{"qid":"A","answer_json":{"x":1,"y":[true,false,null]}}`,
	`{"qid":"A","lambda_state":"→"}`, `{"qid":"A","λ_state":"×"}`, `{"qid":"A","lambda_state":"","λ_state":"<>"}`, `{"qid":"A","query":"q2"}`, `{"qid":"A","q":"q1","query":"q2"}`,
	`{"qid":"A","embeddings":null}`, `{"qid":"A","embeddings":{"question":[1,0],"items":{"x":[0,1]}}}`,
	`{"qid":"A","arm":"canary","event_id":"e1","request_id":"r1","index_hash":"h","arm":"x"}`, `{"qid":"A","arm":null}`, `{"qid":"A","arm":5}`,
	`{"qid":"A"} {}`, `{"qid":"A"`, `{"qid":"A",}`, `{"qid" "A"}`, `{"qid":"A"}x`, `[]`, `null`, ``, `"x"`, `{"qid":"A","x":tru}`, `{"qid":"A","x":[1,]}`,
	`{"qid":"A","x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	`{"qid":"A","x":"\u0041","y":"\x"}`, `{"qid":"A","x":"a\tb"}`,
	// Member names: the quick scan and its fallback to the general one.
	`{"qid":"A","ΔS":[0.5],"λ_state":"→"}`, `{"q\u0069d":"A"}`, `{"q\"id":"A"}`, `{"qid"  :  "A" ,  "arm" :"x"}`,
	`{"qid":"A","x` + "\x01" + `y":1}`, `{"qid":"A","xé":1}`, `{"qid":"A","x` + "\xff" + `":1}`, `{"qid":"A","arm`, `{"qid":"A",arm:"x"}`, `{"":"A","qid":"B"}`,
}

func TestDecodeTraceFastCases(t *testing.T) {
	fast := 0
	for _, line := range fastTraceCases {
		if checkFastTrace(t, []byte(line)) {
			fast++
		}
	}
	if fast < len(fastTraceCases)/3 {
		t.Errorf("the fast path answered only %d of %d cases", fast, len(fastTraceCases))
	}
}

// TestDecodeTraceFastGenerated: the events of the load tool and the demo
// must take the fast path, with the reference's results.
func TestDecodeTraceFastGenerated(t *testing.T) {
	src := gen.NewTraceSource(gen.Options{Seed: 7, Items: 500, Awkward: 0.3, Arms: []string{"live", "canary"}, Now: func() time.Time { return time.Unix(1756297822, 123456789) }})
	n, fast := 20000, 0
	for i := 0; i < n; i++ {
		line := src.Next()
		if checkFastTrace(t, line) {
			fast++
		}
		if checkFastTrace(t, compactTrace(t, line)) {
			fast++
		}
	}
	if fast < 2*n*9/10 {
		t.Errorf("the fast path answered only %d of %d generated events", fast, 2*n)
	}
}

// compactTrace keeps a few members of an event (the load tool's compact
// shape).
func compactTrace(t *testing.T, line []byte) []byte {
	var m map[string]jsontext.Value
	if err := json.Unmarshal(line, &m, jsontext.AllowDuplicateNames(true)); err != nil {
		return line
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for _, k := range []string{"qid", "q_id", "retrieved_ids", "answer_json", "delta_s", "ΔS", "delta_s_cited", "lambda_state", "λ_state", "ts"} {
		if v, ok := m[k]; ok {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + k + `":`)
			b.Write(v)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// FuzzDecodeTraceFast compares DecodeTrace, and its fast path when it
// answers, with the reflection decoder it stands in for.
func FuzzDecodeTraceFast(f *testing.F) {
	for _, line := range fastTraceCases {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkFastTrace(t, line)
	})
}

// benchScratch is the reused lists of the "reuse" benchmark, as the
// sidecar keeps one per ingest goroutine.
var benchScratch TraceScratch

func BenchmarkDecodeTrace(b *testing.B) {
	src := gen.NewTraceSource(gen.Options{Seed: 7, Items: 500, Arms: []string{"live", "canary"}, Now: time.Now})
	lines := make([][]byte, 1024)
	for i := range lines {
		lines[i] = src.Next()
	}
	for _, bc := range []struct {
		name   string
		decode func([]byte) (TraceEvent, error)
	}{{"fast", DecodeTrace}, {"reuse", func(line []byte) (TraceEvent, error) { return DecodeTraceReuse(line, &benchScratch) }}, {"reflect", decodeTraceReflect}} {
		for _, shape := range []string{"full", "compact"} {
			in := lines
			if shape == "compact" {
				in = make([][]byte, len(lines))
				for i := range lines {
					in[i] = compactTrace(nil, lines[i])
				}
			}
			b.Run(bc.name+"/"+shape, func(b *testing.B) {
				benchDecode(b, bc.decode, in)
			})
		}
	}
}

func TestParseUTC(t *testing.T) {
	cases := []string{
		"2025-08-27T12:30:22Z", "2025-08-27T12:30:22.1Z", "2025-08-27T12:30:22.123456789Z", "2025-08-27T12:30:22.1234567891Z",
		"2025-08-27T12:30:22.Z", "2025-08-27T12:30:22,5Z", "2024-02-29T00:00:00Z", "2025-02-29T00:00:00Z", "2025-04-31T00:00:00Z",
		"2025-12-31T23:59:59.999999999Z", "2025-13-01T00:00:00Z", "2025-00-01T00:00:00Z", "2025-01-00T00:00:00Z", "2025-01-01T24:00:00Z",
		"2025-01-01T00:60:00Z", "2025-01-01T00:00:60Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2025-01-01t00:00:00Z",
		"2025-01-01T00:00:00z", "2025-01-01T00:00:00+00:00", "2025-1-01T00:00:00Z", "+025-01-01T00:00:00Z", "2025-01-01T00:00:0xZ",
		"2025-01-01T00:00:00.-1Z", "2025-01-01T00:00:00.00000000Z", "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z",
		"1970-01-01T00:00:00Z", "1969-12-31T23:59:59.999999999Z", "0000-02-29T00:00:00Z", "0000-03-01T00:00:00Z",
		"0001-02-28T00:00:00Z", "2100-02-29T00:00:00Z", "2400-02-29T12:00:00Z", "2025-06-31T00:00:00Z", "2025-07-31T00:00:00Z",
	}
	// Every day of the month and one past it, in years around the leap
	// rules: these are the common form, which parseUTC must read whenever
	// time.Parse does.
	var common []string
	r := rand.New(rand.NewPCG(3, 4))
	for _, year := range []int{0, 1, 4, 99, 100, 399, 400, 1600, 1900, 1969, 1970, 2000, 2023, 2024, 2100, 9999} {
		for month := 1; month <= 12; month++ {
			for day := 1; day <= 32; day++ {
				common = append(common, fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d.%dZ", year, month, day, r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000)))
			}
		}
	}
	for i, s := range append(cases, common...) {
		want, err := time.Parse(time.RFC3339Nano, s)
		got, ok := parseUTC(s)
		if ok && (err != nil || !reflect.DeepEqual(got, want)) {
			t.Errorf("parseUTC(%q) = %v, time.Parse = %v, %v", s, got, want, err)
		}
		if !ok && err == nil && i >= len(cases) {
			t.Errorf("parseUTC(%q) declined a time time.Parse reads as %v", s, want)
		}
	}
}

// TestShortDecimal: the one-pass path gives ParseFloat's value and stops
// where number does, or declines and leaves the parser where it was.
func TestShortDecimal(t *testing.T) {
	cases := []string{"0", "-0", "0.0", "-0.0", "1", "0.5", "0.179", "0.6830000", "123456789012345", "1234567890123456",
		"0.000000000000000000001", "0.0000000000000000000001", "1.0000000000000000000000", "9007199254740993",
		"0.1e3", "1E5", "01", "-", "1.", ".5", "-.5", "+1", "1.5,", "0.25]", "18446744073709551616.5",
		"0.30000000000000004", "999999999999999.9", "99999999999999.99"}
	r := rand.New(rand.NewPCG(8, 9))
	for range 20000 {
		digits := strconv.FormatUint(r.Uint64()>>r.IntN(64), 10)
		k := r.IntN(len(digits) + 1)
		c := digits
		if k < len(digits) {
			c = digits[:len(digits)-k] + "." + digits[len(digits)-k:]
			if c[0] == '.' {
				c = "0" + c
			}
		}
		if r.IntN(4) == 0 {
			c = "-" + c
		}
		cases = append(cases, c, c+"]")
	}
	for _, c := range cases {
		p := fastParser{b: []byte(c)}
		f, ok := p.shortDecimal()
		q := fastParser{b: []byte(c)}
		start, end, _, good := q.number()
		if !ok {
			if p.i != 0 {
				t.Errorf("%q: declined but moved to %d", c, p.i)
			}
			continue
		}
		if !good || p.i != end {
			t.Errorf("%q: read to %d, number() %v to %d", c, p.i, good, end)
			continue
		}
		want, err := strconv.ParseFloat(c[start:end], 64)
		if err != nil || math.Float64bits(f) != math.Float64bits(want) {
			t.Errorf("%q: %v, ParseFloat %v (%v)", c, f, want, err)
		}
	}
}
