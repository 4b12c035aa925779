package checks

import (
	"strings"
	"unicode/utf8"

	"github.com/shadoweval/shadoweval/internal/pycompat"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/wire"
)

// The "why" texts of seed 004, one per rule.
const (
	WhyRefusalSuspect    = "evidence contains query terms but model refused"
	WhyRefusalOK         = "no query terms found in evidence; refusal acceptable"
	WhyTemplateViolated  = "template/citations violated"
	WhyAnswerNotGrounded = "answer text not grounded in evidence"
	WhyEvidenceLacks     = "evidence lacks query terms"
	WhyGrounded          = "citations present and answer grounded"
)

// TriageResult is the decision of seed 004's reflect_one.
type TriageResult struct {
	Label string // one of vocab.TriageLabels
	Why   string
	// Citations are the ids parsed from the answer's "citations: [...]"
	// (CitationIDs), in answer order; never nil.
	Citations []string
}

// Triage classifies one run by the deterministic rules of seed 004.
// ids are the retrieved chunk ids in rank order and texts[i] the evidence
// text of ids[i] ("" when unknown); the evidence is the texts joined with a
// blank line, as the reference does.
//
// Rules, in order: an answer containing "not in context" (after Python
// lower-casing) is refusal_suspect when a query token is in the evidence,
// else refusal_ok. Otherwise generation_drift when the template is violated
// (no "citations:" either) or a cited id was not retrieved; generation_drift
// when no answer phrase is in the evidence but a query token is;
// retrieval_drift when no query token is; ok otherwise.
func Triage(query, answer string, ids, texts []string) TriageResult {
	ansLow := pycompat.Lower(answer)
	refusal := strings.Contains(ansLow, "not in context")
	tmplOK := refusal || strings.Contains(ansLow, "citations:")
	cits := CitationIDs(answer)
	citOverlap := false
	if len(cits) > 0 {
		citOverlap = true
		for _, c := range cits {
			if !containsString(ids, c) {
				citOverlap = false
				break
			}
		}
	}
	evLow := pycompat.Lower(strings.Join(texts, "\n\n"))
	evContainsAnswer := anyPhraseInLoweredEvidence(answer, evLow)
	qAlign := anyQueryTokenInLoweredEvidence(query, evLow)

	res := TriageResult{Citations: cits}
	switch {
	case refusal && qAlign:
		res.Label, res.Why = vocab.TriageRefusalSuspect, WhyRefusalSuspect
	case refusal:
		res.Label, res.Why = vocab.TriageRefusalOK, WhyRefusalOK
	case !tmplOK || len(cits) > 0 && !citOverlap:
		res.Label, res.Why = vocab.TriageGenerationDrift, WhyTemplateViolated
	case !evContainsAnswer && qAlign:
		res.Label, res.Why = vocab.TriageGenerationDrift, WhyAnswerNotGrounded
	case !qAlign:
		res.Label, res.Why = vocab.TriageRetrievalDrift, WhyEvidenceLacks
	default:
		res.Label, res.Why = vocab.TriageOK, WhyGrounded
	}
	return res
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// triageIndex applies the seed 004 rules when the event carries the text of
// its top-k items. The structured answer is rendered in the seed's template
// ("citations: [a, b]" after the claim) so that its template check means
// the same thing: a shipped answer must cite.
func triageIndex(e *wire.TraceEvent, claim string, cited []string, shipped bool) int {
	hasText := false
	for i := range e.TopK {
		if e.TopK[i].Text != "" {
			hasText = true
			break
		}
	}
	if !hasText {
		return -1
	}
	var idBuf, textBuf [16]string // on the stack for the usual top k
	ids, texts := idBuf[:0], textBuf[:0]
	for i := range e.TopK {
		ids, texts = append(ids, e.TopK[i].ID), append(texts, e.TopK[i].Text)
	}
	answer := claim
	if shipped && len(cited) > 0 {
		answer = claim + "\ncitations: [" + strings.Join(cited, ", ") + "]"
	}
	label := Triage(e.Query, answer, ids, texts).Label
	return vocab.TriageIndex(label)
}

// CitationIDs is extract_citation_ids of seed 004: the first match of
// re.search(r"citations\s*:\s*\[([^\]]*)\]", answer, re.IGNORECASE), its
// group split on runs of commas and white space, empty pieces dropped.
// Python semantics: \s is Unicode white space (pycompat.IsSpace) and
// IGNORECASE lets 'i' also match 'İ' (U+0130) and 'ı' (U+0131), and 's'
// match 'ſ' (U+017F). The result is never nil.
func CitationIDs(answer string) []string {
	ids := []string{}
	raw, ok := citationGroup(answer)
	if !ok {
		return ids
	}
	start := -1
	for i, r := range raw {
		sep := r == ',' || pycompat.IsSpace(r)
		switch {
		case sep && start >= 0:
			ids = append(ids, raw[start:i])
			start = -1
		case !sep && start < 0:
			start = i
		}
	}
	if start >= 0 {
		ids = append(ids, raw[start:])
	}
	return ids
}

// citationWord lists, per letter of "citations", the characters that
// Python's re.IGNORECASE matches with it (checked over all code points with
// CPython 3.11).
var citationWord = [...]string{
	"cC", "iIıİ", "tT", "aA", "tT", "iIıİ", "oO", "nN", "sSſ",
}

// citationGroup finds the leftmost match of the citations pattern and
// returns its group. The pattern is deterministic: the white-space runs are
// followed by characters outside \s, and [^\]]* can only end at the first
// ']' that follows, so a left-to-right scan without backtracking finds the
// same match as Python's backtracking engine.
func citationGroup(s string) (string, bool) {
	for start := 0; start < len(s); {
		_, size := utf8.DecodeRuneInString(s[start:])
		if group, ok, hopeless := citationAt(s, start); ok {
			return group, true
		} else if hopeless {
			return "", false
		}
		start += size
	}
	return "", false
}

// citationAt tries the pattern at byte offset i. hopeless is set when the
// prefix matched but no ']' follows: then no later start can match either.
func citationAt(s string, i int) (group string, ok, hopeless bool) {
	for _, set := range citationWord {
		r, size := utf8.DecodeRuneInString(s[i:])
		if size == 0 || !strings.ContainsRune(set, r) {
			return "", false, false
		}
		i += size
	}
	i = skipSpace(s, i)
	if i >= len(s) || s[i] != ':' {
		return "", false, false
	}
	i = skipSpace(s, i+1)
	if i >= len(s) || s[i] != '[' {
		return "", false, false
	}
	i++
	end := strings.IndexByte(s[i:], ']')
	if end < 0 {
		return "", false, true
	}
	return s[i : i+end], true, false
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !pycompat.IsSpace(r) {
			break
		}
		i += size
	}
	return i
}

// phrases is PHRASE_RE.findall(s) of seed 004 with each match stripped:
// PHRASE_RE = [A-Za-z0-9][A-Za-z0-9\-\s]{4,}, \s being Unicode white space.
// A greedy {4,} run either reaches four characters or fails at that start,
// so a linear scan reproduces findall.
func phrases(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		if !isASCIIAlnum(s[i]) {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			continue
		}
		j, n := i+1, 0
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if !(r < utf8.RuneSelf && (isASCIIAlnum(byte(r)) || r == '-') || pycompat.IsSpace(r)) {
				break
			}
			j += size
			n++
		}
		if n >= 4 {
			out = append(out, pycompat.Strip(s[i:j]))
			i = j
		} else {
			i++
		}
	}
	return out
}

func isASCIIAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// anyPhraseInEvidence: some answer phrase of at least 5 code points occurs,
// lower-cased, in the lower-cased evidence.
func anyPhraseInEvidence(ans, ev string) bool {
	return anyPhraseInLoweredEvidence(ans, pycompat.Lower(ev))
}

func anyPhraseInLoweredEvidence(ans, evLow string) bool {
	for _, p := range phrases(ans) {
		if utf8.RuneCountInString(p) >= 5 && strings.Contains(evLow, pycompat.Lower(p)) {
			return true
		}
	}
	return false
}

// anyQueryTokenInEvidence: some token of the lower-cased query (re.split on
// \W+, at least 3 code points) is also a token of the lower-cased evidence.
func anyQueryTokenInEvidence(q, ev string) bool {
	return anyQueryTokenInLoweredEvidence(q, pycompat.Lower(ev))
}

func anyQueryTokenInLoweredEvidence(q, evLow string) bool {
	qtok := map[string]struct{}{}
	words(pycompat.Lower(q), func(w string) {
		if utf8.RuneCountInString(w) >= 3 {
			qtok[w] = struct{}{}
		}
	})
	if len(qtok) == 0 {
		return false
	}
	found := false
	words(evLow, func(w string) {
		if _, ok := qtok[w]; ok {
			found = true
		}
	})
	return found
}

// words calls f with each maximal run of Python \w characters in s: the
// non-empty pieces of re.split(r"\W+", s).
func words(s string, f func(string)) {
	start := -1
	for i, r := range s {
		w := pycompat.IsWord(r)
		switch {
		case w && start < 0:
			start = i
		case !w && start >= 0:
			f(s[start:i])
			start = -1
		}
	}
	if start >= 0 {
		f(s[start:])
	}
}
