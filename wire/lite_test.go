package wire

import (
	"reflect"
	"strings"
	"testing"
)

// The lite decoder must read exactly what the full decoders read: whenever
// DecodeTrace (DecodeGold) accepts a line, the lite decoder accepts it with
// the same fields, and whenever the lite decoder refuses a line, so does the
// full decoder. (The lite decoder may accept lines whose unread fields are
// invalid, such as a bad ts.)

func checkLiteTrace(t *testing.T, line []byte) {
	full, fullErr := DecodeTrace(line)
	var lite TraceLite
	liteErr := NewLiteDecoder().Trace(line, &lite)
	if liteErr == nil && fullErr != nil && strings.Contains(fullErr.Error(), "duplicate object member name") {
		return // the lite decoder takes the last of repeated names, as Python does
	}
	if liteErr != nil && fullErr == nil {
		t.Fatalf("lite refused %q (%v) but DecodeTrace accepted it", line, liteErr)
	}
	if fullErr != nil {
		return
	}
	want := TraceLite{QID: full.QID, RetrievedIDs: full.RetrievedIDs, Claim: full.Answer.Claim, Citations: full.Answer.Citations, CitationsNotList: full.Answer.CitationsNotList}
	if !reflect.DeepEqual(lite, want) {
		t.Fatalf("%q:\nlite %#v\nfull %#v", line, lite, want)
	}
}

func checkLiteGold(t *testing.T, line []byte) {
	full, fullErr := DecodeGold(line)
	var lite GoldLite
	liteErr := NewLiteDecoder().Gold(line, &lite)
	if liteErr == nil && fullErr != nil && strings.Contains(fullErr.Error(), "duplicate object member name") {
		return
	}
	if liteErr != nil && fullErr == nil {
		t.Fatalf("lite refused %q (%v) but DecodeGold accepted it", line, liteErr)
	}
	if fullErr != nil {
		return
	}
	want := GoldLite{QID: full.QID, Answerable: full.Answerable, GoldClaimSubstr: full.GoldClaimSubstr, GoldCitations: full.GoldCitations}
	if !reflect.DeepEqual(lite, want) {
		t.Fatalf("%q:\nlite %#v\nfull %#v", line, lite, want)
	}
}

func TestLiteTrace(t *testing.T) {
	for _, line := range []string{
		`{"qid":"A0001","q":"x","retrieved_ids":["p1#1","p1#2"],"answer_json":{"claim":"X.","citations":["p1#2"]}}`,
		`{"qid":"","q_id":"B","retrieved_ids":null,"answer_json":null}`,
		`{"\u0071id":"esc\u00e9","answer_json":{"citations":"p1","claim":null}}`,
		`{"qid":"A","answer_json":{"citations":0e5}}`,
		`{"qid":"A","answer_json":{"citations":{"x":[1,{"y":null}]}},"topk":[{"id":"z"}],"extra":[1,2,{"a":"b"}]}`,
		`{"qid":"A","retrieved_ids":[]}`,
		`{"qid":"A","retrieved_ids":"p1"}`,
		`{"qid":"A","answer_json":[1]}`,
		`{"qid":5}`,
		`{"qid":"a","qid":"b"}`,
		`{"qid":"a","answer_json":{"claim":"x","citations":["c"]},"answer_json":{"claim":"y"}}`,
		`{"qid":"a"} x`,
		`{"qid":"a","x":NaN}`,
		"{\"qid\":\"\xff\"}",
		`[]`,
		``,
	} {
		checkLiteTrace(t, []byte(line))
	}
}

// TestLiteRepeatedNames pins Python's json semantics for repeated names:
// the last value wins whole.
func TestLiteRepeatedNames(t *testing.T) {
	var tr TraceLite
	err := NewLiteDecoder().Trace([]byte(`{"qid":"a","answer_json":{"claim":"x","citations":["c"]},"qid":"b","answer_json":{"claim":"y"},"x":1,"x":2}`), &tr)
	if err != nil || tr.QID != "b" || tr.Claim != "y" || len(tr.Citations) != 0 || tr.Citations == nil {
		t.Fatalf("got %#v, %v", tr, err)
	}
}

func TestLiteGold(t *testing.T) {
	for _, line := range []string{
		`{"qid":"A0001","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`,
		`{"qid":"A","answerable":false,"gold_claim_substr":[],"gold_citations":null,"relevant":["x"]}`,
		`{"qid":"A","answerable":null}`,
		`{"qid":"","answerable":true}`,
		`{"qid":"A","answerable":1}`,
		`{"qid":"A","answerable":true,"gold_citations":[1]}`,
		`{"answerable":true}`,
	} {
		checkLiteGold(t, []byte(line))
	}
}

func FuzzLiteTrace(f *testing.F) {
	f.Add([]byte(`{"qid":"A0001","retrieved_ids":["p1#1"],"answer_json":{"claim":"X","citations":["p1#1"]}}`))
	f.Fuzz(func(t *testing.T, line []byte) { checkLiteTrace(t, line) })
}

func FuzzLiteGold(f *testing.F) {
	f.Add([]byte(`{"qid":"A0001","answerable":true,"gold_claim_substr":["abcde"],"gold_citations":["p1#2"]}`))
	f.Fuzz(func(t *testing.T, line []byte) { checkLiteGold(t, line) })
}
