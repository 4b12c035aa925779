package checks

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/vocab"
)

// Expectations below were checked against seed 004's reflect.py under
// CPython 3.11 (TestTriageMatchesPython re-checks them when python3 is
// available).

func TestCitationIDs(t *testing.T) {
	tests := []struct {
		ans  string
		want []string
	}{
		{"", []string{}},
		{"citations: [p1#1, p2#3]", []string{"p1#1", "p2#3"}},
		{"CITATIONS:[a,b]", []string{"a", "b"}},
		{"Citations :\n[ a ]", []string{"a"}},
		{"cıtatıons: [a]", []string{"a"}},                 // dotless i
		{"CİTATİONS: [a]", []string{"a"}},                 // dotted capital I
		{"citationſ: [a]", []string{"a"}},                 // long s
		{"citation\u017f\u3000:\u2028[a]", []string{"a"}}, // Unicode \s
		{"citations\x1c:\x1f[a]", []string{"a"}},          // information separators are \s
		{"citations\u200b: [a]", []string{}},              // zero-width space is not
		{"çitations: [a]", []string{}},                    // no folding beyond Python's
		{"citations: [a\vb\x1cc\u00a0d\u0085e,,f]", []string{"a", "b", "c", "d", "e", "f"}},
		{"citations: [ , ,\t]", []string{}},
		{"citations: []", []string{}},
		{"citations: [a", []string{}},
		{"citations: [a citations: [b]", []string{"a", "citations:", "[b"}},
		{"citations: x citations: [b]", []string{"b"}},
		{"citations:: [b]", []string{}},
		{"citations: [a\n]b] citations: [c]", []string{"a"}},
		{"xcitations: [é, 中文, 😀]", []string{"é", "中文", "😀"}},
		{"citations:[p1#1;p2#1]", []string{"p1#1;p2#1"}},
	}
	for _, tt := range tests {
		if got := CitationIDs(tt.ans); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("CitationIDs(%q) = %q, want %q", tt.ans, got, tt.want)
		}
	}
}

func TestPhrases(t *testing.T) {
	tests := []struct {
		s    string
		want []string
	}{
		{"", nil},
		{"abcd", nil},
		{"abcde", []string{"abcde"}},
		{"X rejects null keys.", []string{"X rejects null keys"}},
		{"ab-cd e", []string{"ab-cd e"}},
		{"-abcde", []string{"abcde"}},
		{"abcd \u3000.", []string{"abcd"}},               // matched with the spaces, stripped after
		{"abc\vdef\x1cghi", []string{"abc\vdef\x1cghi"}}, // \s is Unicode white space
		{"naïve answer", []string{"ve answer"}},          // only ASCII letters and digits
		{"\u212aelvin", []string{"elvin"}},
		{"1234. 12345", []string{"12345"}},
		{"ab cd\u200bxyzzy", []string{"ab cd", "xyzzy"}},
	}
	for _, tt := range tests {
		if got := phrases(tt.s); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("phrases(%q) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestQueryTokens(t *testing.T) {
	tests := []struct {
		q, ev string
		want  bool
	}{
		{"What is X?", "X is a store", false}, // "what" is not in the evidence, "is" is too short
		{"What is X?", "what", true},
		{"ab", "ab", false},
		{"", "", false},
		{"ΟΔΟΣ", "ΟΔΟΣ", true},          // both lower-cased with a final sigma
		{"οδοσ", "ΟΔΟΣ", false},         // the evidence's final sigma is ς
		{"İstanbul", "istanbul", false}, // İ lowers to i + U+0307, which splits the word
		{"stanbul", "İstanbul", true},
		{"café", "cafe\u0301", false}, // U+0301 is not \w
		{"cafe", "cafe\u0301", true},
		{"snake_case", "a snake_case b", true},
		{"東京都", "東京都へ", false},
		{"١٢٣", "x ١٢٣ y", true},
		{"Straße", "STRASSE straße", true},
		{"kelvin", "\u212aelvin", true},
		{"tab", "x\vtab\x1c", true},
	}
	for _, tt := range tests {
		if got := anyQueryTokenInEvidence(tt.q, tt.ev); got != tt.want {
			t.Errorf("anyQueryTokenInEvidence(%q, %q) = %v, want %v", tt.q, tt.ev, got, tt.want)
		}
	}
}

func TestTriage(t *testing.T) {
	ids := []string{"p1#1", "p1#2"}
	texts := []string{"X is a key-value store. X rejects null keys.", "Y supports TTL."}
	tests := []struct {
		name       string
		q, ans     string
		ids, texts []string
		label, why string
		cits       []string
	}{
		{"ok", "What rejects keys?", "rejects null keys. citations: [p1#1]", ids, texts, vocab.TriageOK, WhyGrounded, []string{"p1#1"}},
		{"refusal ok", "What is Z?", "not in context", ids, texts, vocab.TriageRefusalOK, WhyRefusalOK, []string{}},
		{"refusal suspect", "What rejects keys?", "  Not In Context ", ids, texts, vocab.TriageRefusalSuspect, WhyRefusalSuspect, []string{}},
		{"refusal with İ is not a refusal", "What is Z?", "NOT İN CONTEXT", ids, texts, vocab.TriageGenerationDrift, WhyTemplateViolated, []string{}},
		{"refusal wins over citations", "rejects?", "not in context citations: [zz]", ids, texts, vocab.TriageRefusalSuspect, WhyRefusalSuspect, []string{"zz"}},
		{"no template", "What rejects keys?", "rejects null keys.", ids, texts, vocab.TriageGenerationDrift, WhyTemplateViolated, []string{}},
		{"dotless citations parse but fail the template", "What rejects keys?", "rejects null keys. cıtatıons: [p1#1]", ids, texts, vocab.TriageGenerationDrift, WhyTemplateViolated, []string{"p1#1"}},
		{"citation not retrieved", "What rejects keys?", "rejects null keys. citations: [p1#1, p3]", ids, texts, vocab.TriageGenerationDrift, WhyTemplateViolated, []string{"p1#1", "p3"}},
		{"template without ids", "What rejects keys?", "rejects null keys. citations: []", ids, texts, vocab.TriageOK, WhyGrounded, []string{}},
		{"not grounded", "What rejects keys?", "Nothing here. citations: [p1#1]", ids, texts, vocab.TriageGenerationDrift, WhyAnswerNotGrounded, []string{"p1#1"}},
		{"retrieval drift", "Who is Zed?", "rejects null keys. citations: [p1#1]", ids, texts, vocab.TriageRetrievalDrift, WhyEvidenceLacks, []string{"p1#1"}},
		{"no evidence", "What rejects keys?", "citations: []", nil, nil, vocab.TriageRetrievalDrift, WhyEvidenceLacks, []string{}},
		{"phrase across chunks", "alpha?", "beta\n\ngamma. citations: [c, d]", []string{"c", "d"}, []string{"alpha beta", "gamma"}, vocab.TriageOK, WhyGrounded, []string{"c", "d"}},
		{"unknown ids give empty text", "alpha?", "alpha beta. citations: [c]", []string{"c", "u"}, []string{"alpha beta", ""}, vocab.TriageOK, WhyGrounded, []string{"c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Triage(tt.q, tt.ans, tt.ids, tt.texts)
			want := TriageResult{Label: tt.label, Why: tt.why, Citations: tt.cits}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Triage = %+v, want %+v", got, want)
			}
		})
	}
}

// TestTriageMatchesPython runs the rules of reflect.py itself on random
// strings over an alphabet of troublesome characters and compares every
// helper and the final label.
func TestTriageMatchesPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "offline", "testdata", "reference", "reflect.py"))
	if err != nil {
		t.Fatal(err)
	}
	alphabet := []string{
		"a", "b", "x", "X", "S", "1", "9", " ", " ", "-", "_", ",", ":", "[", "]", ".", "\n", "\t", "\v", "\f", "\r",
		"\x1c", "\x1f", "\u0085", "\u00a0", "\u2028", "\u3000", "\u200b", "ı", "İ", "ſ", "ß", "Σ", "σ", "ς", "é",
		"e\u0301", "\u212a", "中", "١", "😀", "citations", "CITATIONS", "citations:", "cıtatıons", "cİtatİonſ",
		"not in context", "NOT IN CONTEXT", "alpha", "beta", "gamma", "p1#1", "p2", "key",
	}
	r := rand.New(rand.NewPCG(4, 2))
	gen := func(max int) string {
		var b strings.Builder
		for n := r.IntN(max + 1); n > 0; n-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	type tcase struct {
		Q     string   `json:"q"`
		Ans   string   `json:"ans"`
		IDs   []string `json:"ids"`
		Texts []string `json:"texts"`
	}
	var cases []tcase
	for i := 0; i < 3000; i++ {
		c := tcase{Q: gen(6), Ans: gen(12)}
		for k := r.IntN(3); k > 0; k-- {
			c.IDs = append(c.IDs, []string{"p1#1", "p2", "a", "b"}[r.IntN(4)])
			c.Texts = append(c.Texts, gen(10))
		}
		if i%3 == 0 { // make containment and alignment likely
			c.Texts = append(c.Texts, gen(2)+c.Ans+gen(2), c.Q)
			c.IDs = append(c.IDs, "x", "y")
		}
		if i%2 == 0 && len(c.IDs) > 0 { // and citations in scope
			c.Ans += " citations: [" + strings.Join(c.IDs[r.IntN(len(c.IDs)):], ", ") + "]"
		}
		cases = append(cases, c)
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	prog := `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("reflect", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
out = []
for c in json.load(sys.stdin):
    ids = c["ids"] or []
    cm = dict(zip(ids, c["texts"] or []))
    ev = "\n\n".join(cm.get(i, "") for i in ids)
    r = m.reflect_one({"q": c["q"], "answer": c["ans"], "chunks": [{"id": i} for i in ids]}, cm)
    out.append({
        "cits": m.extract_citation_ids(c["ans"]),
        "phrases": m.phrases(c["ans"]),
        "contains": m.any_phrase_in_evidence(c["ans"], ev),
        "align": m.any_query_token_in_evidence(c["q"], ev),
        "label": r["label"], "why": r["why"],
    })
json.dump(out, sys.stdout)
`
	cmd := exec.Command(py, "-c", prog, script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	var want []struct {
		Cits     []string `json:"cits"`
		Phrases  []string `json:"phrases"`
		Contains bool     `json:"contains"`
		Align    bool     `json:"align"`
		Label    string   `json:"label"`
		Why      string   `json:"why"`
	}
	if err := json.Unmarshal(outb, &want); err != nil {
		t.Fatal(err)
	}
	fails := 0
	seen := map[string]int{}
	for i, c := range cases {
		w := want[i]
		m := map[string]string{}
		for j, id := range c.IDs {
			m[id] = c.Texts[j]
		}
		texts := make([]string, len(c.IDs))
		for j, id := range c.IDs {
			texts[j] = m[id]
		}
		ev := strings.Join(texts, "\n\n")
		got := Triage(c.Q, c.Ans, c.IDs, texts)
		seen[got.Why]++
		ph := phrases(c.Ans)
		if ph == nil {
			ph = []string{}
		}
		if w.Phrases == nil {
			w.Phrases = []string{}
		}
		if w.Cits == nil {
			w.Cits = []string{}
		}
		if !reflect.DeepEqual(got.Citations, w.Cits) || !reflect.DeepEqual(ph, w.Phrases) ||
			anyPhraseInEvidence(c.Ans, ev) != w.Contains || anyQueryTokenInEvidence(c.Q, ev) != w.Align ||
			got.Label != w.Label || got.Why != w.Why {
			t.Errorf("case %d %+q:\n go     cits=%q phrases=%q contains=%v align=%v %s/%s\n python cits=%q phrases=%q contains=%v align=%v %s/%s",
				i, c, got.Citations, ph, anyPhraseInEvidence(c.Ans, ev), anyQueryTokenInEvidence(c.Q, ev), got.Label, got.Why,
				w.Cits, w.Phrases, w.Contains, w.Align, w.Label, w.Why)
			if fails++; fails > 10 {
				t.FailNow()
			}
		}
	}
	// The generator must reach every rule, or the comparison proves little.
	for _, why := range []string{WhyRefusalSuspect, WhyRefusalOK, WhyTemplateViolated, WhyAnswerNotGrounded, WhyEvidenceLacks, WhyGrounded} {
		if seen[why] < 20 {
			t.Errorf("rule %q reached only %d times", why, seen[why])
		}
	}
	t.Logf("rules reached: %v", seen)
}
