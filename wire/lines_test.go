package wire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestParallelLinesOrder feeds several blocks' worth of lines with mixed
// terminators and blank lines and checks that every value arrives once, in
// order, with its line number.
func TestParallelLinesOrder(t *testing.T) {
	var b strings.Builder
	want := map[int]string{}
	line := 0
	terms := []string{"\n", "\r\n", "\r", "\n \t\x1c\n"}
	for i := 0; b.Len() < 3*blockSize; i++ {
		line++
		qid := fmt.Sprintf("q%07d", i)
		want[line] = qid
		fmt.Fprintf(&b, `{"qid":%q,"answerable":true,"question":%q}`, qid, strings.Repeat("x", i%300))
		term := terms[i%len(terms)]
		b.WriteString(term)
		line += strings.Count(term, "\n") - 1
		if term == "\r" {
			line++
		}
	}
	got := 0
	err := ParallelLines(strings.NewReader(b.String()), "gold.jsonl", DecodeGold, func(n int, g Gold) error {
		if want[n] != g.QID {
			return fmt.Errorf("line %d: got %s, want %s", n, g.QID, want[n])
		}
		got++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != len(want) {
		t.Errorf("got %d values, want %d", got, len(want))
	}
}

func TestParallelLinesFirstErrorWins(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 200000; i++ {
		switch i {
		case 150000:
			b.WriteString("{\"answerable\":true}\n")
		case 190000:
			b.WriteString("not json\n")
		default:
			fmt.Fprintf(&b, "{\"qid\":\"q%d\",\"answerable\":true}\n", i)
		}
	}
	err := ParallelLines(strings.NewReader(b.String()), "gold.jsonl", DecodeGold, func(int, Gold) error { return nil })
	var le *LineError
	if !errors.As(err, &le) || le.Line != 150001 || err.Error() != "gold.jsonl:150001: field qid: required" {
		t.Fatalf("err = %v, want gold.jsonl:150001: field qid: required", err)
	}
}

func TestParallelLinesLongLine(t *testing.T) {
	long := fmt.Sprintf(`{"qid":"long","answerable":true,"question":%q}`, strings.Repeat("é", 3*blockSize))
	n := 0
	err := ParallelLines(strings.NewReader("\n"+long+"\n{\"qid\":\"b\",\"answerable\":true}"), "g", DecodeGold, func(line int, g Gold) error {
		n++
		if (g.QID == "long") != (line == 2) || (g.QID == "b") != (line == 3) {
			return fmt.Errorf("%s at line %d", g.QID, line)
		}
		return nil
	})
	if err != nil || n != 2 {
		t.Fatalf("n=%d err=%v", n, err)
	}
}
