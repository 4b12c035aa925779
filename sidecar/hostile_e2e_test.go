package sidecar_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/testenv"
)

// TestHostileInput sends every kind of malformed message on every input
// subject. Each is rejected with its reason, counted in
// shadoweval_rejected_events_total{reason} and republished as it came to
// the dead-letter subject with the reason in a header, and a good event
// sent after it is still scored. Floods of made-up arms and content types
// are folded into _other instead of growing label cardinality.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	const maxBytes, maxArms, maxTypes = 256 << 10, 6, 3
	h := startApp(t, appOptions{goldFile: typedGold(t, 8), configure: func(c *config.Config) {
		c.Limits.MaxMessageBytes = maxBytes
		c.Limits.MaxArms = maxArms
		c.Limits.MaxContentTypes = maxTypes
	}})
	dead := testenv.Collect(t, h.NC, "shadoweval.deadletter", 200)

	ids := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = strconv.Quote("p" + strconv.Itoa(i))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	topk := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = `{"id":"p` + strconv.Itoa(i) + `"}`
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	const deep = 100000 // far beyond the decoder's limit
	nested := strings.Repeat("[", deep) + strings.Repeat("]", deep)
	huge := strings.Repeat("x", maxBytes)
	judge := func(extra string) string { return `{"qid":"A1","agent":"scholar","label":"VALID"` + extra + `}` }

	const T, R, A, J = "trace", "retrieval", "answer", "judgement"
	all := []string{T, R, A, J}
	traces := []string{T, R, A}
	cases := []struct {
		name   string
		kinds  []string
		data   string // for the trace kinds
		jdata  string // for judgements; "" = data
		reason string
	}{
		{"truncated JSON", all, `{"qid":"A1","retrieved_ids":["p1#1"]`, "", "invalid_json"},
		{"not JSON", all, `not json at all`, "", "invalid_json"},
		{"two values", all, `{"qid":"A1"} {"qid":"A2"}`, "", "invalid_json"},
		{"wrong type", all, `{"qid":"A1","retrieved_ids":"p1#1"}`, judge(`,"retrieved_ids":{"a":1}`), "bad_field"},
		{"wrong nested type", traces, `{"qid":"A1","answer_json":{"claim":["x"]}}`, "", "bad_field"},
		{"qid not a string", all, `{"qid":5}`, `{"qid":5,"agent":"scholar","label":"VALID"}`, "missing_qid"},
		{"missing qid", all, `{"retrieved_ids":["p1#1"],"answer_json":{"claim":"x"}}`, `{"agent":"scholar","label":"VALID"}`, "missing_qid"},
		{"empty qid", all, `{"qid":"","answer_json":{"claim":"x"}}`, `{"qid":"","agent":"scholar","label":"VALID"}`, "missing_qid"},
		{"huge message", all, `{"qid":"A1","q":"` + huge + `"}`, judge(`,"reason":"` + huge + `"`), "too_large"},
		{"thousands of retrieved ids", all, `{"qid":"A1","retrieved_ids":` + ids(5000) + `}`, judge(`,"retrieved_ids":` + ids(5000)), "too_many_topk"},
		{"thousands of topk items", traces, `{"qid":"A1","topk":` + topk(1001) + `}`, "", "too_many_topk"},
		{"deep nesting", all, `{"qid":"A1","x":` + nested + `}`, judge(`,"flags":{"x":` + nested + `}`), "too_deep"},
		{"deep nesting, unterminated", all, `{"qid":"A1","x":` + strings.Repeat("[", deep), judge(`,"flags":{"x":` + strings.Repeat("[", deep)), "too_deep"},
		{"NaN", all, `{"qid":"A1","delta_s":[NaN]}`, judge(`,"flags":{"x":NaN}`), "invalid_json"},
		{"Infinity", all, `{"qid":"A1","delta_s_cited":Infinity}`, judge(`,"flags":{"x":-Infinity}`), "invalid_json"},
		{"overflowing number", traces, `{"qid":"A1","delta_s":[1e999]}`, "", "bad_field"},
		{"overflowing latency", traces, `{"qid":"A1","latency_ms":-1e999}`, "", "bad_field"},
		{"overflowing embedding", traces, `{"qid":"A1","embeddings":{"question":[1e400],"items":{}}}`, "", "bad_field"},
		{"invalid UTF-8 in qid", all, "{\"qid\":\"A\xff1\"}", "{\"qid\":\"A\xff1\",\"agent\":\"scholar\",\"label\":\"VALID\"}", "invalid_utf8"},
		{"invalid UTF-8 in claim", traces, "{\"qid\":\"A1\",\"answer_json\":{\"claim\":\"caf\xc3\"}}", "", "invalid_utf8"},
		{"invalid UTF-8 in a name", all, "{\"qid\":\"A1\",\"\xfe\":1}", judge(",\"\xfe\":1"), "invalid_utf8"},
		{"duplicate field", all, `{"qid":"A1","qid":"A2"}`, judge(`,"agent":"auditor"`), "invalid_json"},
		{"delta_s out of range", traces, `{"qid":"A1","delta_s":[1.5]}`, "", "bad_field"},
		{"bad ts", traces, `{"qid":"A1","ts":"yesterday"}`, "", "bad_field"},
		{"unknown label", []string{J}, "", `{"qid":"A1","agent":"scholar","label":"MAYBE"}`, "bad_field"},
	}

	byReason := map[string]float64{}
	rejected, scored := int64(0), int64(0)
	for _, c := range cases {
		for _, kind := range c.kinds {
			data := c.data
			if kind == J && c.jdata != "" {
				data = c.jdata
			}
			subject := "rag." + kind + ".h"
			id := c.name + " on " + kind
			msg := &nats.Msg{Subject: subject, Data: []byte(data), Header: nats.Header{"X-Case": {id}}}
			if err := h.NC.PublishMsg(msg); err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			h.PublishJSON("rag.trace.h", goodTrace("A1"))
			rejected++
			scored++
			byReason[c.reason]++
			// Counted, and the process still scores.
			h.waitEvents("h", map[string]int64{"rejected": rejected, "scored": scored})
			m := testenv.Next(t, dead)
			if got := m.Header.Get("X-Case"); got != id {
				t.Fatalf("dead letter of %q: got the one of %q", id, got)
			}
			if r := m.Header.Get(stream.HeaderReason); !strings.HasPrefix(r, c.reason+": ") || len(r) > 1024 {
				t.Errorf("%s: dead-letter reason %.200q (%d bytes), want %s: … in at most 1 KiB", id, r, len(r), c.reason)
			}
			if got := m.Header.Get(stream.HeaderSubject); got != subject {
				t.Errorf("%s: dead letter from subject %q, want %q", id, got, subject)
			}
			if string(m.Data) != data {
				t.Errorf("%s: the dead letter is not the message as it came (%d bytes, want %d)", id, len(m.Data), len(data))
			}
		}
	}
	for reason, n := range byReason {
		h.CheckMetric("shadoweval_rejected_events_total", map[string]string{"reason": reason}, n)
	}
	h.WaitMetric("shadoweval_deadletter_messages_total", map[string]string{"result": "success"}, float64(rejected))

	t.Logf("%d hostile messages rejected: %v", rejected, byReason)
	// A content-type flood (gold items of 8 types, maxTypes kept): the
	// others are folded into _other, and still scored.
	for i := 0; i < 8; i++ {
		h.PublishJSON("rag.trace.types", typedTrace(i))
	}
	h.waitEvents("types", map[string]int64{"scored": 8})
	kept := 0
	for i := 0; i < 8; i++ {
		if code, _ := h.Get("/api/v1/windows?arm=types&window=5m&type=ty" + strconv.Itoa(i)); code == 200 {
			kept++
		}
	}
	if kept != maxTypes {
		t.Errorf("%d content types have windows, want %d", kept, maxTypes)
	}
	code, body := h.Get("/api/v1/windows?arm=types&window=5m&type=_other")
	var other struct {
		Metrics map[string]struct{ Samples int64 } `json:"metrics"`
	}
	if code != 200 || json.Unmarshal(body, &other) != nil || other.Metrics["precision"].Samples != 8-maxTypes {
		t.Errorf("type _other: %d %s, want %d precision samples", code, body, 8-maxTypes)
	}

	// An arm flood, from the arm field and from subjects, with names too
	// long or odd: the first arms up to the cap are kept, the rest go to
	// _other, and every event is still counted.
	const flood = 40
	for i := 0; i < flood; i++ {
		ev := goodTrace("A2")
		switch i % 3 {
		case 0:
			ev.Arm = "flood-" + strconv.Itoa(i)
			h.PublishJSON("rag.trace.h", ev)
		case 1:
			h.PublishJSON("rag.trace.sub-"+strconv.Itoa(i), ev)
		case 2:
			ev.Arm = strings.Repeat("long", 30) + strconv.Itoa(i)
			h.PublishJSON("rag.trace.h", ev)
		}
	}
	poll(t, "every flooded event to be counted", func() string {
		fams := h.Scrape()
		arms := map[string]bool{}
		var n float64
		for _, m := range fams["shadoweval_events_total"].GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "arm" {
					arms[lp.GetValue()] = true
					if v := lp.GetValue(); v != "h" && v != "types" {
						n += testenv.SampleValue(m)
					}
				}
			}
		}
		if len(arms) > maxArms+1 {
			t.Fatalf("%d arm labels in shadoweval_events_total, want at most %d: %v", len(arms), maxArms+1, arms)
		}
		if n != flood {
			return fmt.Sprintf("%v events counted in the flooded arms", n)
		}
		return ""
	})
	code, body = h.Get("/api/v1/windows?window=5m")
	var list []struct{ Arm string }
	if err := json.Unmarshal(body, &list); err != nil || code != 200 {
		t.Fatalf("GET /api/v1/windows: %d %v", code, err)
	}
	if len(list) > maxArms+1 {
		t.Errorf("%d arms have windows, want at most %d", len(list), maxArms+1)
	}
	rep := h.mustReport("_other")
	if rep.Events["scored"] == 0 {
		t.Errorf("nothing scored in _other: %v", rep.Events)
	}
	// Still scoring the first arm after all that.
	h.PublishJSON("rag.trace.h", goodTrace("U1"))
	h.waitEvents("h", map[string]int64{"rejected": rejected, "scored": scored + 1})
}

// typedGold writes a gold file of A1 and n items T0… of content types
// ty0…, and returns its path.
func typedGold(t *testing.T, n int) string {
	t.Helper()
	data, err := os.ReadFile("testdata/gold_v1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.Write(data)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"qid":"T%d","answerable":true,"gold_claim_substr":["typed answer %d"],"gold_citations":["t%d"],"type":"ty%d"}`+"\n", i, i, i, i)
	}
	path := testenv.WriteFile(t, t.TempDir(), "typed.jsonl", []byte(b.String()))
	return path
}

// typedTrace is a right answer for T<i> of typedGold.
func typedTrace(i int) event {
	id := "t" + strconv.Itoa(i)
	return event{QID: "T" + strconv.Itoa(i), RetrievedIDs: []string{id}, DeltaS: []float64{0.2},
		Answer: &answer{Claim: "The typed answer " + strconv.Itoa(i) + ".", Citations: []string{id}}}
}
