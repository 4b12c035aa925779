package pycompat

import (
	"bytes"
	"encoding/json"
	"math"
	"os/exec"
	"strings"
	"testing"
)

// Expectations below were printed by CPython 3.11.
func TestLower(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ABC", "abc"},
		{"abc", "abc"},
		{"ΟΔΟΣ", "οδος"},
		{"ΟΔΟΣ.", "οδος."},
		{"Σ", "σ"},
		{"aΣ", "aς"},
		{"aΣb", "aσb"},
		{"aΣ'", "aς'"},
		{"aΣ'b", "aσ'b"},
		{"a'Σ", "a'ς"},
		{"ΣΑΣ ΣΑΣ", "σας σας"},
		{"x\u0301Σ", "x\u0301ς"},
		{"Σ\u0301", "σ\u0301"},
		{"İstanbul", "i\u0307stanbul"},
		{"K\u212a", "kk"},
		{"ÀÉ", "àé"},
		{"ǅ", "ǆ"},
	}
	for _, tt := range tests {
		if got := Lower(tt.in); got != tt.want {
			t.Errorf("Lower(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzStrip: Strip's shortcut for claims that start and end with ASCII
// other than white space gives what trimming by IsSpace does.
func FuzzStrip(f *testing.F) {
	for _, s := range []string{"", "x", " x ", "\x1cx", "x\x1f", "\u00a0x", "x\u3000", "\x7f", "a\u0085", "\xffx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Strip(s), strings.TrimFunc(s, IsSpace); got != want {
			t.Errorf("Strip(%q) = %q, want %q", s, got, want)
		}
	})
}

func TestStripAndSpace(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  x  ", "x"},
		{"\x1cnot in context\x1f", "not in context"},
		{"\u00a0x\u3000", "x"},
		{"\u200bx", "\u200bx"}, // zero-width space is not white space in Python
		{"\v\fx\r\n", "x"},
		{"", ""},
		{"x", "x"},
		{"\x7fx\x7f", "\x7fx\x7f"}, // DEL is not white space
		{"x\u0085", "x"},           // NEL is, past ASCII
		{"!not in context~", "!not in context~"},
	}
	for _, tt := range tests {
		if got := Strip(tt.in); got != tt.want {
			t.Errorf("Strip(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if IsSpace('\u200b') || !IsSpace('\u2028') || !IsSpace(0x1e) || IsSpace('a') {
		t.Error("IsSpace disagrees with str.isspace")
	}
}

func TestIsWord(t *testing.T) {
	for _, r := range "aZ09_éΣ日٣Ⅳ½" {
		if !IsWord(r) {
			t.Errorf("IsWord(%q) = false", r)
		}
	}
	for _, r := range " -.\u0301\u200b!\u00a0" {
		if IsWord(r) {
			t.Errorf("IsWord(%q) = true", r)
		}
	}
}

func TestRoundAndRepr(t *testing.T) {
	tests := []struct {
		x        float64
		repr, r4 string
	}{
		{0, "0.0", "0.0"},
		{math.Copysign(0, -1), "-0.0", "-0.0"},
		{1, "1.0", "1.0"},
		{0.1, "0.1", "0.1"},
		{1.0 / 3, "0.3333333333333333", "0.3333"},
		{2.0 / 3, "0.6666666666666666", "0.6667"},
		{1e16, "1e+16", "1e+16"},
		{1e15, "1000000000000000.0", "1000000000000000.0"},
		{123456789012345678, "1.2345678901234568e+17", "1.2345678901234568e+17"},
		{0.0001, "0.0001", "0.0001"},
		{0.00001, "1e-05", "0.0"},
		{1.5e-5, "1.5e-05", "0.0"},
		{1e22, "1e+22", "1e+22"},
		{100, "100.0", "100.0"},
		{5e-324, "5e-324", "0.0"},
		{0.03125, "0.03125", "0.0312"},
		{0.00005, "5e-05", "0.0001"},
		{0.00015, "0.00015", "0.0001"},
		{0.12345, "0.12345", "0.1235"},
		{0.99995, "0.99995", "1.0"},
		{2.675, "2.675", "2.675"},
		{0.30000000000000004, "0.30000000000000004", "0.3"},
		{-0.00001, "-1e-05", "-0.0"},
	}
	for _, tt := range tests {
		if got := FloatRepr(tt.x); got != tt.repr {
			t.Errorf("FloatRepr(%v) = %s, want %s", tt.x, got, tt.repr)
		}
		if got := FloatRepr(Round(tt.x, 4)); got != tt.r4 {
			t.Errorf("repr(round(%v, 4)) = %s, want %s", tt.x, got, tt.r4)
		}
	}
}

func TestParseFloat(t *testing.T) {
	good := map[string]float64{
		"0.80": 0.8, " 1 ": 1, "1_0.5": 10.5, ".5": 0.5, "5.": 5, "1e-3": 0.001,
		"+2E+2": 200, "\u00a00.1\u3000": 0.1, "1e999": math.Inf(1), "-Infinity": math.Inf(-1),
	}
	for in, want := range good {
		got, err := ParseFloat(in)
		if err != nil || got != want {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if v, err := ParseFloat("NaN"); err != nil || !math.IsNaN(v) {
		t.Errorf("ParseFloat(NaN) = %v, %v", v, err)
	}
	for _, in := range []string{"", ".", "0x1p-2", "1__0", "_1", "1_", "1e", "--1", "1.2.3", "e5", "1,5", "infx"} {
		if v, err := ParseFloat(in); err == nil {
			t.Errorf("ParseFloat(%q) = %v, want error", in, v)
		}
	}
}

func TestParseInt(t *testing.T) {
	good := map[string]int{"5": 5, " -1 ": -1, "+007": 7, "1_000": 1000}
	for in, want := range good {
		if got, err := ParseInt(in); err != nil || got != want {
			t.Errorf("ParseInt(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "5.0", "1__0", "0x10", "--2", "五"} {
		if v, err := ParseInt(in); err == nil {
			t.Errorf("ParseInt(%q) = %v, want error", in, v)
		}
	}
}

func TestSplitLines(t *testing.T) {
	var got []string
	SplitLines([]byte("a\nb\r\nc\rd\n\ne"), func(n int, line []byte) bool {
		got = append(got, string(line))
		return true
	})
	if want := "a|b|c|d||e"; strings.Join(got, "|") != want {
		t.Errorf("SplitLines = %q, want %q", strings.Join(got, "|"), want)
	}
	n := 0
	SplitLines([]byte("x\ny\n"), func(lineNo int, _ []byte) bool { n = lineNo; return false })
	if n != 1 {
		t.Errorf("SplitLines did not stop: last line %d", n)
	}
}

func TestDumps(t *testing.T) {
	v := Object{
		{"answered", 2},
		{"precision", 1.0},
		{"gates", Object{{"precision", "0.80"}, {"é", "\x7f\"\\\n😀"}}},
		{"empty", Object{}},
		{"list", []string{}},
		{"pass", true},
		{"none", nil},
	}
	want := `{
  "answered": 2,
  "precision": 1.0,
  "gates": {
    "precision": "0.80",
    "\u00e9": "\u007f\"\\\n\ud83d\ude00"
  },
  "empty": {},
  "list": [],
  "pass": true,
  "none": null
}`
	if got := string(Dumps(v, DumpOptions{Indent: 2, EnsureASCII: true})); got != want {
		t.Errorf("Dumps indent=2:\n%s\nwant\n%s", got, want)
	}
	compact := Object{{"q", "é\x01"}, {"chunks", []string{"a", "b"}}, {"x", []any{1.5, math.Inf(-1)}}}
	if got, want := string(Dumps(compact, DumpOptions{})), `{"q": "é\u0001", "chunks": ["a", "b"], "x": [1.5, -Infinity]}`; got != want {
		t.Errorf("Dumps compact = %s, want %s", got, want)
	}
}

// TestAgainstPython checks the text helpers on many strings against the real
// interpreter when it is installed.
func TestAgainstPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	var inputs []string
	for _, base := range []string{"ΣΑΣ", "İI", "ǄǅǆΣ'", "\x1c Hello\u2028", "K\u212aſ", "ΌΣΟΣ σ.Σ", "\u0130\u0049\u03a3\u1e9e", "ⅠⅡⓐⒶ"} {
		for _, suffix := range []string{"", " ", "Σ", "a", "\u0301Σ", ".Σ"} {
			inputs = append(inputs, base+suffix, suffix+base)
		}
	}
	in, _ := json.Marshal(inputs)
	cmd := exec.Command(py, "-c", `import json,sys
xs=json.load(sys.stdin)
print(json.dumps([[x.lower(), x.strip()] for x in xs]))`)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	var want [][2]string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, s := range inputs {
		if got := Lower(s); got != want[i][0] {
			t.Errorf("Lower(%q) = %q, python %q", s, got, want[i][0])
		}
		if got := Strip(s); got != want[i][1] {
			t.Errorf("Strip(%q) = %q, python %q", s, got, want[i][1])
		}
	}
}
