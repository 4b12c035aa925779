package wire

import (
	"errors"
	"reflect"
	"testing"
)

func TestDecodeGoldErrors(t *testing.T) {
	tests := []struct {
		line, want string
	}{
		{`{"answerable":true}`, "field qid: required"},
		{`{"qid":"","answerable":true}`, "field qid: must not be empty"},
		{`{"qid":7,"answerable":true}`, "field qid: want a string, got a number"},
		{`{"qid":"a"}`, "field answerable: required (true or false)"},
		{`{"qid":"a","answerable":"yes"}`, "field answerable: want a bool, got a string"},
		{`{"qid":"a","answerable":true,"gold_citations":["x",1]}`, "field gold_citations.1: want a string, got a number"},
		{`{"qid":"a","answerable":true,"relevant_offsets":{"x":[5,1]}}`, "field relevant_offsets.x: want 0 <= start <= end, got [5,1]"},
		{`{"qid":"a","answerable":true,"relevant_offsets":{"x":[1]}}`, "field relevant_offsets.x: want a [start,end] pair: too few array elements"},
		{`{"qid":"a","answerable":true,"anchor_section":"S..2"}`, `field anchor_section: empty component in section path "S..2"`},
		{`{"qid":"a","qid":"b","answerable":true}`, "field qid: invalid JSON at byte 11: duplicate object member name"},
		{`{"qid":"a","answerable":NaN}`, "field answerable: invalid JSON at byte 24: invalid character 'N' at start of value"},
		{`{"qid":"\ud800","answerable":true}`, "field qid: invalid JSON at byte 8: invalid surrogate pair `\\ud800\",\"ans` in string"},
		{"{\"qid\":\"\xff\",\"answerable\":true}", "field qid: invalid JSON at byte 8: invalid UTF-8"},
		{`[]`, "want an object, got an array"},
	}
	for _, tt := range tests {
		_, err := DecodeGold([]byte(tt.line))
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("DecodeGold(%s) error = %v, want a *FieldError", tt.line, err)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("DecodeGold(%s)\n got %q\nwant %q", tt.line, err.Error(), tt.want)
		}
	}
}

func TestDecodeGold(t *testing.T) {
	g, err := DecodeGold([]byte(`{"qid":"Q1","answerable":false,"gold_claim_substr":[],"relevant":["b","a"],"gold_citations":["a"],"unknown":{"x":1},"Answerable":3}`))
	if err != nil {
		t.Fatal(err)
	}
	if g.QID != "Q1" || g.Answerable || g.GoldClaimSubstr == nil || len(g.GoldClaimSubstr) != 0 || g.Type != "prose" {
		t.Errorf("DecodeGold = %+v", g)
	}
	if got := g.Citations(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("Citations() = %v, want [a b]", got)
	}
	g, _ = DecodeGold([]byte(`{"qid":"Q2","answerable":true,"gold_claim_substr":null}`))
	if g.GoldClaimSubstr != nil {
		t.Errorf("null gold_claim_substr decoded as %#v, want nil", g.GoldClaimSubstr)
	}
}

func TestDecodeTrace(t *testing.T) {
	tests := []struct {
		name, line string
		check      func(TraceEvent) bool
	}{
		{"reference line", `{"qid":"A0001","q":"Does X support null keys?","retrieved_ids":["p1#1","p1#2"],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}`,
			func(e TraceEvent) bool {
				return e.QID == "A0001" && e.HasAnswer && e.Answer.Claim == "X rejects null keys." && reflect.DeepEqual(e.Answer.Citations, []string{"p1#2"}) && e.Paraphrase == -1
			}},
		{"q_id alias when qid empty", `{"qid":"","q_id":"B"}`, func(e TraceEvent) bool { return e.QID == "B" && !e.HasAnswer && e.Answer.Citations != nil }},
		{"null answer_json", `{"qid":"A","answer_json":null}`, func(e TraceEvent) bool { return !e.HasAnswer && len(e.Answer.Citations) == 0 }},
		{"falsy citations", `{"qid":"A","answer_json":{"citations":{}}}`, func(e TraceEvent) bool { return !e.Answer.CitationsNotList && len(e.Answer.Citations) == 0 }},
		{"zero citations", `{"qid":"A","answer_json":{"citations":-0.0}}`, func(e TraceEvent) bool { return !e.Answer.CitationsNotList }},
		{"string citations", `{"qid":"A","answer_json":{"citations":"p1"}}`, func(e TraceEvent) bool { return e.Answer.CitationsNotList }},
		{"object citations", `{"qid":"A","answer_json":{"citations":{"a":1}}}`, func(e TraceEvent) bool { return e.Answer.CitationsNotList }},
		{"topk wins", `{"qid":"A","retrieved_ids":["x"],"topk":[{"id":"y","section_id":"S.1"}]}`, func(e TraceEvent) bool { return reflect.DeepEqual(e.IDs(), []string{"y"}) }},
		{"aliases", `{"qid":"A","ΔS":[0.5],"λ_state":"→","query":"qq","ts":"2025-08-27T12:30:22Z","seed":2}`, func(e TraceEvent) bool {
			return len(e.DeltaS) == 1 && e.LambdaState == "→" && e.Query == "qq" && e.TS.Year() == 2025 && e.Seed == 2
		}},
	}
	for _, tt := range tests {
		e, err := DecodeTrace([]byte(tt.line))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !tt.check(e) {
			t.Errorf("%s: unexpected %+v", tt.name, e)
		}
	}
}

func TestDecodeTraceErrors(t *testing.T) {
	tests := []struct{ line, want string }{
		{`{"q":"x"}`, "field qid: required (a non-empty string, or q_id)"},
		{`{"qid":5}`, "field qid: want a string, got a number"},
		{`{"qid":"a","ts":"yesterday"}`, `field ts: want an RFC 3339 time, got "yesterday"`},
		{`{"qid":"a","answer_json":[1]}`, "field answer_json: want an object, got an array"},
		{`{"qid":"a","answer_json":{"claim":3}}`, "field answer_json.claim: want a string, got a number"},
		{`{"qid":"a","answer_json":{"citations":["x",["y"]]}}`, "field answer_json.citations.1: want a string, got an array"},
		{`{"qid":"a","retrieved_ids":"p1"}`, "field retrieved_ids: want an array, got a string"},
		{`{"qid":"a","topk":[{"score":1}]}`, "field topk.0.id: required"},
		{`{"qid":"a","delta_s":[1.5]}`, "field delta_s.0: want a number in [0,1], got 1.5"},
		{`{"qid":"a","latency_ms":1e999}`, "field latency_ms: want a number, got a number: value out of range"},
		{`{"qid":"a"} {}`, "invalid JSON at byte 12: invalid character '{' after top-level value"},
	}
	for _, tt := range tests {
		_, err := DecodeTrace([]byte(tt.line))
		if err == nil || err.Error() != tt.want {
			t.Errorf("DecodeTrace(%s)\n got %v\nwant %s", tt.line, err, tt.want)
		}
	}
}

func TestDecodeJudgement(t *testing.T) {
	j, err := DecodeJudgement([]byte(`{"qid":"A","agent":"auditor","label":"VALID","flags":{"provenance_violation":"no","constraints_mismatch":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !j.Flags["provenance_violation"] || j.Flags["constraints_mismatch"] {
		t.Errorf("flags truthiness wrong: %v", j.Flags)
	}
	for line, want := range map[string]string{
		`{"qid":"A","agent":"judge","label":"VALID"}`: `field agent: want "scholar" or "auditor", got "judge"`,
		`{"qid":"A","agent":"scholar"}`:               "field label: required",
		`{"qid":"A","agent":"scholar","label":"ok"}`:  `field label: want one of VALID, NOT_IN_CONTEXT, REJECT, ABSTAIN, got "ok"`,
		`{"agent":"scholar","label":"VALID"}`:         "field qid: required",
	} {
		if _, err := DecodeJudgement([]byte(line)); err == nil || err.Error() != want {
			t.Errorf("DecodeJudgement(%s) = %v, want %s", line, err, want)
		}
	}
}
