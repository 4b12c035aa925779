package offline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/internal/pycompat"
)

func TestDecodeTraceLine(t *testing.T) {
	tests := []struct {
		line    string
		q, ans  string
		ids     []string
		wantErr string
	}{
		{line: `{"q":"x"}`, q: "x", ids: []string{}},
		{line: " \t{\"q\":\"x\",\"answer\":\"a\"}\r\n ", q: "x", ans: "a", ids: []string{}},
		{line: `{"q":"x","chunks":[{"id":"a"},{"ID":"b"},{},{"id":"c","score":1}]}`, q: "x", ids: []string{"a", "c"}},
		{line: `{"q":"x","chunks":[]}`, q: "x", ids: []string{}},
		{line: `{"q":"\u00e9\ud83d\ude00"}`, q: "é😀", ids: []string{}},
		{line: `{"Q":"x"}`, wantErr: `field "q": missing`},
		{line: `{"q":null}`, wantErr: `field "q": want a string, got null`},
		{line: `{"q":"x","answer":1}`, wantErr: `field "answer": want a string, got a number`},
		{line: `{"q":"x","chunks":{}}`, wantErr: `field "chunks": want an array of objects, got an object`},
		{line: `{"q":"x","chunks":[[]]}`, wantErr: `field "chunks[0]": want an object, got an array`},
		{line: `{"q":"x","chunks":[{"id":true}]}`, wantErr: `field "chunks[0].id": want a string, got a boolean`},
		{line: "\v{\"q\":\"x\"}", wantErr: "invalid JSON"},
		{line: `{"q":"x"}{}`, wantErr: "invalid JSON"},
		{line: `"q"`, wantErr: "want a JSON object, got a string"},
		{line: `{"q":"x","q":"y"}`, wantErr: "duplicate object member name"},
		{line: `{"q":"x","s":Infinity}`, wantErr: "invalid JSON"},
	}
	for _, tt := range tests {
		rec, err := decodeTraceLine([]byte(tt.line))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("decodeTraceLine(%q) error = %v, want %q", tt.line, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("decodeTraceLine(%q): %v", tt.line, err)
			continue
		}
		want := traceRecord{Q: tt.q, Answer: tt.ans, ChunkID: tt.ids}
		if !reflect.DeepEqual(rec, want) {
			t.Errorf("decodeTraceLine(%q) = %+v, want %+v", tt.line, rec, want)
		}
	}
}

func TestDecodeChunks(t *testing.T) {
	m, err := decodeChunks([]byte(`[{"id":"a","text":"1"},{"id":"a","text":"2"},{"id":7,"text":"n"},{"id":null,"text":[]},{"id":"b","text":{}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || string(m["a"].text) != `"2"` || m["a"].index != 1 || string(m["b"].text) != `{}` {
		t.Errorf("chunks = %v", m)
	}
	for doc, want := range map[string]string{
		`{}`:                       "want a JSON array",
		`[{"id":"a"}]`:             `item 0: field "text": missing`,
		`[{"id":["a"],"text":""}]`: `item 0: field "id": want a string, got an array`,
		`[1]`:                      "item 0: want an object, got a number",
		`[`:                        "invalid JSON",
		"[]\x00":                   "invalid JSON",
		"[\"\xff\"]":               "invalid UTF-8",
	} {
		if _, err := decodeChunks([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("decodeChunks(%q) = %v, want %q", doc, err, want)
		}
	}
}

func TestRunTriageErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "c.json"), `[{"id":"a","text":"alpha"},{"id":"n","text":5}]`)
	writeFile(t, filepath.Join(dir, "t.jsonl"), `{"q":"alpha","answer":"x","chunks":[{"id":"a"}]}`+"\n"+`{"q":"x","chunks":[{"id":"n"}]}`+"\n")
	var out bytes.Buffer
	err := RunTriage(&out, io.Discard, filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "c.json"))
	if err == nil || !strings.Contains(err.Error(), `t.jsonl:2: chunk "n" (`) || !strings.Contains(err.Error(), `c.json item 1): field "text": want a string, got a number`) {
		t.Errorf("err = %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("output written before the error: %q", out.String())
	}
	if err := RunTriage(&out, io.Discard, filepath.Join(dir, "missing"), filepath.Join(dir, "c.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing trace: %v", err)
	}
	if err := RunTriage(&out, io.Discard, filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing chunks: %v", err)
	}
}

// TestTriageMatchesPythonRandom compares RunTriage with reflect.py on seeded
// random files (skipped without python3).
func TestTriageMatchesPythonRandom(t *testing.T) {
	py := python(t)
	if py == "" {
		t.Skip("no CPython 3.11 to compare with")
	}
	words := []string{"alpha", "beta", "Gamma", "key", "keys", "X", "rejects", "null", "ſ", "ı", "İstanbul", "ΟΔΟΣ", "οδος",
		"straße", "naïve", "cafe\u0301", "东京", "١٢٣", "snake_case", "a-b-c", "12345", "not in context", "NOT IN CONTEXT",
		"citations:", "citations: [", "]", "[", ",", "p1#1", "p2", "\u3000", "\v", "\x1c", "\u00a0", "\u2028", "\u0085", "\t", " ", " ", " ", ".", "?"}
	ids := []string{"p1#1", "p2", "p3", "é", "unknown"}
	for seed := uint64(1); seed <= 8; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
			text := func(n int) string {
				var b strings.Builder
				for i := r.IntN(n + 1); i > 0; i-- {
					b.WriteString(pick(words))
					if r.IntN(2) == 0 {
						b.WriteString(" ")
					}
				}
				return b.String()
			}
			q := func(s string) string { return string(pycompat.AppendString(nil, s, r.IntN(2) == 0)) }
			dir := t.TempDir()
			var chunks []string
			for _, id := range ids[:4] {
				chunks = append(chunks, fmt.Sprintf(`{"id":%s,"text":%s}`, q(id), q(text(12))))
			}
			writeFile(t, filepath.Join(dir, "chunks.json"), "["+strings.Join(chunks, ",\n")+"]")
			var trace strings.Builder
			for i := 0; i < 200; i++ {
				var cs []string
				for n := r.IntN(4); n > 0; n-- {
					cs = append(cs, fmt.Sprintf(`{"id":%s}`, q(pick(ids))))
				}
				ans := text(8)
				if r.IntN(2) == 0 {
					ans += " citations: [" + pick(ids) + ", " + pick(ids) + "]"
				}
				fmt.Fprintf(&trace, `{"q":%s,"answer":%s,"chunks":[%s],"ok":true}`, q(text(4)), q(ans), strings.Join(cs, ","))
				trace.WriteString(pick([]string{"\n", "\r\n", "\r", "\n\n", "\n \x0b\n"}))
			}
			writeFile(t, filepath.Join(dir, "trace.jsonl"), trace.String())
			goRes := runTriageGo(t, dir)
			if goRes.err != nil {
				t.Fatal(goRes.err)
			}
			pyRes := runTriagePython(t, py, dir)
			if pyRes.err != nil {
				t.Fatalf("reference failed: %v\n%s", pyRes.err, pyRes.stderr)
			}
			compare(t, "reference", goRes, pyRes)
		})
	}
}

// Lines in the sidecar's wire format are not what triage reads: one
// without q is refused saying which format is, and one with q but
// retrieved_ids and answer_json in place of chunks and answer is labelled
// as reflect.py labels it, with stderr saying so.
func TestTriageWireFormatLines(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "c.json"), `[{"id":"a","text":"alpha"}]`)
	writeFile(t, filepath.Join(dir, "t.jsonl"), `{"q":"alpha","retrieved_ids":["a"],"answer_json":{"claim":"x","citations":["a"]}}`+"\n"+
		`{"q":"alpha","answer":"x","chunks":[{"id":"a"}]}`+"\n"+`{"q":"beta","retrieved_ids":["a"]}`+"\n")
	var out, stderr bytes.Buffer
	if err := RunTriage(&out, &stderr, filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "c.json")); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 3 || !strings.HasPrefix(out.String(), `{"q": "alpha", "label": "`) {
		t.Errorf("output %q, want 3 labels", out.String())
	}
	if want := "t.jsonl:1 and 1 more lines have retrieved_ids or answer_json but no chunks or answer"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want it to say %q", stderr.String(), want)
	}
	stderr.Reset()
	writeFile(t, filepath.Join(dir, "w.jsonl"), `{"qid":"A1","retrieved_ids":["a"]}`+"\n")
	err := RunTriage(&out, &stderr, filepath.Join(dir, "w.jsonl"), filepath.Join(dir, "c.json"))
	if err == nil || !strings.Contains(err.Error(), `w.jsonl:1: field "q": missing: a trace line is {"q", "chunks"`) {
		t.Errorf("err = %v", err)
	}
	// A seed 004 trace says nothing on stderr.
	writeFile(t, filepath.Join(dir, "s.jsonl"), `{"q":"alpha","answer":"x","chunks":[{"id":"a"}]}`+"\n")
	if err := RunTriage(&out, &stderr, filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "c.json")); err != nil || stderr.Len() != 0 {
		t.Errorf("seed 004 trace: %v, stderr %q", err, stderr.String())
	}
}
