package wire

import "testing"

func TestEventQID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"qid":"A1"}`, "A1"},
		{`{"q_id":"A2"}`, "A2"},
		{`{"q_id":"alias","qid":"A3"}`, "A3"},
		{`{"qid":"A4","q_id":"alias"}`, "A4"},
		{`{"qid":"","q_id":"A5"}`, "A5"},
		{`{"qid":null,"q_id":"A6"}`, "A6"},
		{`{"qid":7,"q_id":"A7"}`, "A7"},
		{`{"x":{"qid":"no"},"qid":"A8"}`, "A8"},
		{`{"qid":"a\"b.c"}`, `a"b.c`},
		{`{"qid":"A9","answer_json":{"claim":"cut short`, "A9"},
		{`{"qid":5}`, ""},
		{`{"qid":""}`, ""},
		{`{"q":"where is the qid?"}`, ""},
		{`{"x":[{"qid":"no"}]}`, ""},
		{`["qid","A1"]`, ""},
		{`not json`, ""},
		{``, ""},
	} {
		if got := EventQID([]byte(tc.in)); got != tc.want {
			t.Errorf("EventQID(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
