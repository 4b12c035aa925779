package wire

import (
	"bytes"
	"errors"
	"testing"
)

// The fuzz targets check that no input makes a decoder panic and that every
// refusal is a *FieldError naming what is wrong. Their seed corpus is under
// testdata/fuzz.

func FuzzDecodeGold(f *testing.F) {
	f.Add([]byte(`{"qid":"A0001","question":"Does X support null keys?","answerable":true,"gold_claim_substr":["rejects null keys"],"gold_citations":["p1#2"]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		g, err := DecodeGold(line)
		checkDecodeResult(t, err)
		if err == nil && (g.QID == "" || g.Type == "") {
			t.Fatalf("accepted gold without qid or type: %+v", g)
		}
	})
}

func FuzzDecodeTrace(f *testing.F) {
	f.Add([]byte(`{"qid":"A0001","q":"Does X support null keys?","retrieved_ids":["p1#1","p1#2","p2#1"],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := DecodeTrace(line)
		checkDecodeResult(t, err)
		if err == nil && (e.QID == "" || e.Answer.Citations == nil && !e.Answer.CitationsNotList) {
			t.Fatalf("accepted trace without qid or citations: %+v", e)
		}
	})
}

func FuzzDecodeJudgement(f *testing.F) {
	f.Add([]byte(`{"qid":"A0001","request_id":"r1","agent":"scholar","label":"VALID","flags":{"provenance_violation":false}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		_, err := DecodeJudgement(line)
		checkDecodeResult(t, err)
	})
}

func FuzzParallelLines(f *testing.F) {
	f.Add([]byte("{\"qid\":\"a\",\"answerable\":true}\r\n\n  \x1c\r{\"qid\":\"b\",\"answerable\":false}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		last := 0
		err := ParallelLines(bytes.NewReader(data), "f", DecodeGold, func(n int, g Gold) error {
			if n <= last {
				t.Fatalf("line %d after line %d", n, last)
			}
			last = n
			return nil
		})
		var le *LineError
		if err != nil && !errors.As(err, &le) {
			t.Fatalf("error %v is not a *LineError", err)
		}
	})
}

func checkDecodeResult(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Msg == "" {
		t.Fatalf("error %q is not a *FieldError with a message", err)
	}
}
