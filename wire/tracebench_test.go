package wire

import (
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/wire/gen"
)

// The live path keeps its hand-written decoder only while it is at least
// 1.5x faster than one built on go-json-experiment (jsonexpDecoder). These
// benchmarks measure that on realistic events:
//
//	go test -run '^$' -bench 'TraceDecoders' -benchmem -count 6 ./stream/
//
// BenchmarkTraceDecoders is for benchstat (-col /dec -row /shape);
// BenchmarkTraceDecodersPaired reports the ratio measured in alternating
// batches, which holds up on a loaded machine.

// benchShapes are generated live events: the whole event (top-k with
// texts), the load tool's compact and small shapes, and the two halves of
// a split event. All carry ts, as publishers stamp it.
var benchShapes = []struct {
	name string
	keys []string // nil: the whole event
}{
	{"full", nil},
	{"compact", append([]string{"ts"}, gen.Shapes["compact"]...)},
	{"small", append([]string{"ts"}, gen.Shapes["small"]...)},
	{"retrieval", []string{"ts", "qid", "q_id", "event_id", "request_id", "arm", "retrieved_ids", "topk", "delta_s", "ΔS", "index_hash", "latency_ms"}},
	{"answer", []string{"ts", "qid", "q_id", "event_id", "request_id", "arm", "answer_json", "delta_s_cited", "lambda_state", "λ_state", "paraphrase", "seed"}},
}

// benchEvents makes n events of one shape, with the source's default share
// of awkward content.
func benchEvents(tb testing.TB, keys []string, n int) [][]byte {
	src := gen.NewTraceSource(gen.Options{Seed: 7, Items: 1000, Arms: []string{"live", "canary"}, Now: func() time.Time { return time.Unix(1756297822, 123456789) }})
	out := make([][]byte, n)
	for i := range out {
		ev := src.Next()
		if keys != nil {
			var err error
			if ev, err = gen.Keep(ev, keys); err != nil {
				tb.Fatal(err)
			}
		}
		out[i] = ev
	}
	return out
}

// The decoders compared, each called as the sidecar calls DecodeTraceReuse:
// strings share the message, lists live in a scratch that the next event
// reuses. "unmarshal" is plain json.Unmarshal, for scale.
var (
	benchFastScratch TraceScratch
	benchOracle      jsonexpDecoder
	benchDecoders    = []struct {
		name   string
		decode func([]byte) (TraceEvent, error)
	}{
		{"tracefast", func(line []byte) (TraceEvent, error) { return DecodeTraceReuse(line, &benchFastScratch) }},
		{"jsonexp", func(line []byte) (TraceEvent, error) { return benchOracle.decode(line, true, true) }},
		{"unmarshal", decodeTraceReflect},
	}
)

func BenchmarkTraceDecoders(b *testing.B) {
	for _, shape := range benchShapes {
		lines := benchEvents(b, shape.keys, 1024)
		size := 0
		for _, l := range lines {
			size += len(l)
		}
		for _, dec := range benchDecoders {
			b.Run("shape="+shape.name+"/dec="+dec.name, func(b *testing.B) {
				benchDecode(b, dec.decode, lines)
				b.ReportMetric(float64(size)/float64(len(lines)), "bytes/event") // after the loop, which clears metrics
			})
		}
	}
}

// BenchmarkTraceDecodersPaired times tracefast and jsonexp in alternating
// batches of the same events, so that both see the same load, and reports
// each one's time per event and the ratio jsonexp / tracefast.
func BenchmarkTraceDecodersPaired(b *testing.B) {
	const batch = 64
	fast, text := benchDecoders[0].decode, benchDecoders[1].decode
	for _, shape := range benchShapes {
		lines := benchEvents(b, shape.keys, 1024)
		b.Run("shape="+shape.name, func(b *testing.B) {
			var tFast, tText time.Duration
			i := 0
			for b.Loop() {
				start := time.Now()
				for j := range batch {
					if _, err := fast(lines[(i+j)%len(lines)]); err != nil {
						b.Fatal(err)
					}
				}
				mid := time.Now()
				for j := range batch {
					if _, err := text(lines[(i+j)%len(lines)]); err != nil {
						b.Fatal(err)
					}
				}
				tFast += mid.Sub(start)
				tText += time.Since(mid)
				i += batch
			}
			n := float64(i)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(tFast.Nanoseconds())/n, "tracefast-ns/event")
			b.ReportMetric(float64(tText.Nanoseconds())/n, "jsonexp-ns/event")
			b.ReportMetric(float64(tText)/float64(tFast), "ratio")
		})
	}
}

// benchDecode decodes lines in turn, one an iteration, reporting the
// allocations.
func benchDecode(b *testing.B, decode func([]byte) (TraceEvent, error), lines [][]byte) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := decode(lines[i%len(lines)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
