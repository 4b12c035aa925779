package offline

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/shadoweval/shadoweval/internal/pycompat"
	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/vocab"
)

// The fuzz targets feed arbitrary bytes to each decoder. Malformed input
// must come back as an error, never a panic, and whatever is accepted must
// be valid, duplicate-free JSON within Python's limits. Seed corpora are in
// testdata/fuzz/<FuzzName>/.

func checkAccepted(t *testing.T, doc []byte, maxDepth int) {
	t.Helper()
	if !utf8.Valid(doc) || !jsontext.Value(doc).IsValid() {
		t.Fatalf("accepted invalid JSON %q", doc)
	}
	if err := checkPythonLimits(doc, maxDepth); err != nil {
		t.Fatalf("accepted %q beyond Python's limits: %v", doc, err)
	}
}

func FuzzPairsLine(f *testing.F) {
	f.Add([]byte(`{"qid":"a","scholar":{"label":"VALID"},"auditor":{"label":"REJECT"},"flags":{"provenance_violation":"0"},"answer_json":{"citations":["p1"]},"retrieved_ids":["p1"]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		stripped := []byte(pycompat.Strip(string(line)))
		r, err := decodePairLine(stripped)
		if err != nil {
			return
		}
		checkAccepted(t, stripped, maxDepthPairs)
		r.where = "fuzz:1"
		final, why, err := r.arbitrate()
		if err == nil {
			if final != vocab.LabelValid && final != vocab.LabelReject || why == "" {
				t.Fatalf("arbitrate = %q, %q", final, why)
			}
			if final == vocab.LabelValid && (r.auditor != vocab.LabelValid || r.scholar != vocab.LabelValid && r.scholar != vocab.LabelNotInContext) {
				t.Fatalf("VALID for %q/%q", r.scholar, r.auditor)
			}
		}
		if q, err := r.qidString(); err == nil && !utf8.ValidString(q) {
			t.Fatalf("qid %q", q)
		}
	})
}

func FuzzJudgementLine(f *testing.F) {
	f.Add([]byte(`{"qid":"a","label":"VALID","reason":"r"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		stripped := []byte(pycompat.Strip(string(line)))
		qid, label, err := decodeJudgementLine(stripped)
		if err != nil {
			return
		}
		checkAccepted(t, stripped, maxDepthJudgement)
		if !utf8.ValidString(qid) {
			t.Fatalf("qid %q", qid)
		}
		if len(label) > 0 && !label.IsValid() {
			t.Fatalf("label %q", label)
		}
		stringField(label, false) // must not panic
	})
}

func FuzzTriageLine(f *testing.F) {
	f.Add([]byte(`{"q":"What is X?","chunks":[{"id":"p1#1"}],"answer":"X rejects null keys. citations: [p1#1]","ok":true}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, err := decodeTraceLine(line)
		if err != nil {
			return
		}
		checkAccepted(t, line, maxDepthTrace)
		// Use the ids themselves as evidence so that every rule can fire.
		res := checks.Triage(rec.Q, rec.Answer, rec.ChunkID, rec.ChunkID)
		switch res.Label {
		case vocab.TriageOK, vocab.TriageRetrievalDrift, vocab.TriageGenerationDrift,
			vocab.TriageRefusalOK, vocab.TriageRefusalSuspect:
		default:
			t.Fatalf("label %q", res.Label)
		}
		for _, c := range res.Citations {
			if c == "" || strings.ContainsFunc(c, func(r rune) bool { return r == ',' || r == ']' || pycompat.IsSpace(r) }) {
				t.Fatalf("citation %q", c)
			}
		}
		pycompat.Dumps(pycompat.Object{{Key: "q", Value: rec.Q}, {Key: "chunks", Value: rec.ChunkID}, {Key: "c", Value: res.Citations}}, pycompat.DumpOptions{})
	})
}

func FuzzChunks(f *testing.F) {
	f.Add([]byte(`[{"id":"p1#1","text":"X rejects null keys."},{"id":"p1#1","text":"later wins"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeChunks(data)
		if err != nil {
			return
		}
		checkAccepted(t, data, maxDepthChunks)
		for id, c := range m {
			if !utf8.ValidString(id) || !c.text.IsValid() {
				t.Fatalf("chunk %q: %q", id, c.text)
			}
			stringField(c.text, false) // must not panic
		}
	})
}
