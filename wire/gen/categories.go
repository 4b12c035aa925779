package gen

import "math/bits"

// Awkward categories. A category is a bit in a cat set; the names are
// what Stats.Categories counts.
type cat uint8

type catSet uint64

func (s catSet) has(c cat) bool { return s&(1<<c) != 0 }
func (s *catSet) set(c cat)     { *s |= 1 << c }
func (s catSet) count() int     { return bits.OnesCount64(uint64(s)) }

// Line-level categories shared by gold rows and traces.
const (
	cBlankLines  cat = iota // blank / white-space-only lines before the record
	cCRLF                   // record ends with \r\n
	cPadding                // spaces / tabs around the record
	cASCIIEscape            // ensure_ascii escapes, \/ , upper-case hex
	cEscapedKeys            // member names with an escaped first letter
	cJSONSpacing            // ", " and ": " separators
	cKeyOrder               // members in an unusual order

	// gold content
	gUnicodeQID
	gUnicodeSubstr
	gShortSubstr
	gSubstrEmpty
	gSubstrMissing
	gSubstrNull
	gCitationsEmpty
	gCitationsMissing
	gCitationsNull
	gRelevantAlias
	gOddIDs
	gExtraFields

	// trace structure
	tMissing
	tDuplicate
	tOrphan
	// trace content
	tQIDAlias
	tQIDAndAlias
	tRetrievedNull
	tRetrievedMissing
	tRetrievedEmpty
	tRetrievedDup
	tTopKOnly
	tAnswerNull
	tAnswerMissing
	tAnswerEmpty
	tClaimNull
	tClaimMissing
	tClaimEmpty
	tCitationsNull
	tCitationsMissing
	tCitationsEmpty
	tCitationsOutside
	tCitationsString
	tCitationsEmptyString
	tCitationsFalsy
	tCitationsTruthy
	tCitationsDup
	tCitationCase
	tClaimCase
	tClaimUnicode
	tRefusalVariant
	tFieldAliases
	tExtraFields
	tNumberForms
	tRedelivery // TraceSource only: the previous event again, same event_id
	numCats
)

var catNames = [numCats]string{
	cBlankLines: "blank_lines", cCRLF: "crlf", cPadding: "padding", cASCIIEscape: "ascii_escape",
	cEscapedKeys: "escaped_keys", cJSONSpacing: "json_spacing", cKeyOrder: "key_order",
	gUnicodeQID: "unicode_qid", gUnicodeSubstr: "unicode_substr", gShortSubstr: "short_substr",
	gSubstrEmpty: "substr_empty", gSubstrMissing: "substr_missing", gSubstrNull: "substr_null",
	gCitationsEmpty: "citations_empty", gCitationsMissing: "citations_missing", gCitationsNull: "citations_null",
	gRelevantAlias: "relevant_alias", gOddIDs: "odd_ids", gExtraFields: "extra_fields",
	tMissing: "missing", tDuplicate: "duplicate", tOrphan: "orphan",
	tQIDAlias: "q_id", tQIDAndAlias: "qid_and_q_id",
	tRetrievedNull: "retrieved_null", tRetrievedMissing: "retrieved_missing", tRetrievedEmpty: "retrieved_empty",
	tRetrievedDup: "retrieved_dup", tTopKOnly: "topk_only",
	tAnswerNull: "answer_null", tAnswerMissing: "answer_missing", tAnswerEmpty: "answer_empty",
	tClaimNull: "claim_null", tClaimMissing: "claim_missing", tClaimEmpty: "claim_empty",
	tCitationsNull: "citations_null", tCitationsMissing: "citations_missing", tCitationsEmpty: "citations_empty",
	tCitationsOutside: "citations_outside", tCitationsString: "citations_string",
	tCitationsEmptyString: "citations_empty_string", tCitationsFalsy: "citations_falsy",
	tCitationsTruthy: "citations_truthy", tCitationsDup: "citations_dup", tCitationCase: "citation_case",
	tClaimCase: "claim_case", tClaimUnicode: "claim_unicode", tRefusalVariant: "refusal_variant",
	tFieldAliases: "field_aliases", tExtraFields: "extra_fields", tNumberForms: "number_forms",
	tRedelivery: "redelivery",
}

type weighted struct {
	c cat
	w int
}

var lineCats = []weighted{
	{cBlankLines, 3}, {cCRLF, 2}, {cPadding, 2}, {cASCIIEscape, 2}, {cEscapedKeys, 1}, {cJSONSpacing, 2}, {cKeyOrder, 2},
}

var goldCats = append([]weighted{
	{gUnicodeQID, 3}, {gUnicodeSubstr, 6}, {gShortSubstr, 3}, {gSubstrEmpty, 3}, {gSubstrMissing, 3}, {gSubstrNull, 1},
	{gCitationsEmpty, 3}, {gCitationsMissing, 3}, {gCitationsNull, 1}, {gRelevantAlias, 2}, {gOddIDs, 2}, {gExtraFields, 2},
}, lineCats...)

// content categories of one trace, usable by files and the TraceSource
var traceContentCats = []weighted{
	{tQIDAlias, 3}, {tQIDAndAlias, 1},
	{tRetrievedNull, 2}, {tRetrievedMissing, 2}, {tRetrievedEmpty, 1}, {tRetrievedDup, 1}, {tTopKOnly, 1},
	{tAnswerNull, 2}, {tAnswerMissing, 1}, {tAnswerEmpty, 1},
	{tClaimNull, 2}, {tClaimMissing, 1}, {tClaimEmpty, 1},
	{tCitationsNull, 2}, {tCitationsMissing, 1}, {tCitationsEmpty, 2}, {tCitationsOutside, 3},
	{tCitationsString, 3}, {tCitationsEmptyString, 2}, {tCitationsFalsy, 1}, {tCitationsTruthy, 1},
	{tCitationsDup, 1}, {tCitationCase, 1},
	{tClaimCase, 4}, {tClaimUnicode, 4}, {tRefusalVariant, 5},
	{tFieldAliases, 1}, {tExtraFields, 1}, {tNumberForms, 1},
}

var traceFileCats = append(append([]weighted{{tMissing, 4}, {tDuplicate, 5}, {tOrphan, 3}}, traceContentCats...), lineCats...)

var sourceCats = append(append([]weighted{{tOrphan, 3}, {tRedelivery, 2}}, traceContentCats...),
	weighted{cASCIIEscape, 2}, weighted{cEscapedKeys, 1}, weighted{cJSONSpacing, 2}, weighted{cKeyOrder, 2})

func catNamesOf(list []weighted) []string {
	out := make([]string, len(list))
	for i, w := range list {
		out[i] = catNames[w.c]
	}
	return out
}

// GoldCategories lists the awkward categories of gold rows.
func GoldCategories() []string { return catNamesOf(goldCats) }

// TraceCategories lists the awkward categories of file traces.
func TraceCategories() []string { return catNamesOf(traceFileCats) }

// SourceCategories lists the awkward categories of TraceSource events.
func SourceCategories() []string { return catNamesOf(sourceCats) }

func totalWeight(list []weighted) int {
	t := 0
	for _, w := range list {
		t += w.w
	}
	return t
}

func pickCat(x *rnd, list []weighted, total int) cat {
	n := x.intn(total)
	for _, w := range list {
		if n < w.w {
			return w.c
		}
		n -= w.w
	}
	return list[len(list)-1].c
}

var (
	goldTotal   = totalWeight(goldCats)
	traceTotal  = totalWeight(traceFileCats)
	sourceTotal = totalWeight(sourceCats)
)

// exclusive categories exclude each other within one item
var structural = catSet(1<<tMissing | 1<<tDuplicate | 1<<tOrphan | 1<<tRedelivery)

// drawCats decides whether an item is awkward and which categories it gets:
// one, and a second one a fifth of the time.
func drawCats(x *rnd, p float64, list []weighted, total int) catSet {
	var s catSet
	if !x.chance(p) {
		return s
	}
	c := pickCat(x, list, total)
	s.set(c)
	if x.chance(0.2) {
		d := pickCat(x, list, total)
		if !(structural.has(c) && structural.has(d)) {
			s.set(d)
		}
	}
	return s
}

func (s catSet) record(st *Stats) {
	if st == nil {
		return
	}
	st.Items++
	if s == 0 {
		return
	}
	st.AwkwardItems++
	for c := cat(0); c < numCats; c++ {
		if s.has(c) {
			st.add(catNames[c])
		}
	}
}
