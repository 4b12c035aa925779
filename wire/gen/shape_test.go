package gen

import (
	"bytes"
	"testing"
)

func TestKeep(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		keys     []string
		want     string
	}{
		{"order of keys", `{"b":1,"a":[2,3],"c":{"d":"x"}}`, []string{"c", "a"}, `{"c":{"d":"x"},"a":[2,3]}`},
		{"missing skipped", `{"a":1}`, []string{"z", "a", "y"}, `{"a":1}`},
		{"none kept", `{"a":1}`, []string{"z"}, `{}`},
		{"non-ASCII name", `{"ΔS":[0.5],"qid":"q"}`, []string{"qid", "ΔS"}, `{"qid":"q","ΔS":[0.5]}`},
	} {
		got, err := Keep([]byte(tc.in), tc.keys)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: Keep = %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
	if _, err := Keep([]byte(`{"a":`), []string{"a"}); err == nil {
		t.Error("Keep of truncated JSON: no error")
	}
}

// Every shape keeps a trace event the decoder's tests and the load tool
// can use: qid and the answer, and ΔS only in compact.
func TestShapes(t *testing.T) {
	src := NewTraceSource(Options{Seed: 1, Items: 20, Arms: []string{"live"}})
	ev := src.NextFor("live")
	for name, keys := range Shapes {
		got, err := Keep(ev, keys)
		if err != nil {
			t.Fatal(err)
		}
		for _, member := range []string{`"qid":`, `"answer_json":`, `"retrieved_ids":`} {
			if !bytes.Contains(got, []byte(member)) {
				t.Errorf("%s: no %s in %s", name, member, got)
			}
		}
		if hasDS := bytes.Contains(got, []byte(`"delta_s":`)); hasDS != (name == "compact") {
			t.Errorf("%s: delta_s kept %v", name, hasDS)
		}
		if len(got) >= len(ev) {
			t.Errorf("%s: %d bytes, the whole event %d", name, len(got), len(ev))
		}
	}
}
