package gen

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

type fieldMode uint8

const (
	present fieldMode = iota
	empty             // []
	missing           // no member
	null              // null
)

// goldItem is one generated gold item, a pure function of (options, index).
type goldItem struct {
	idx        int
	cats       catSet
	qid        string
	qidPrefix  int // index into uniQIDPrefixes, -1 for "A"
	answerable bool
	subj       subject
	fact       int // index into facts, -1 when not an answerable fact
	topic      int // index into uniTopics, -1
	n, port    int
	question   string
	claim      string // a right claim, for answerable items
	subs       []string
	subsMode   fieldMode
	cites      []string
	citesMode  fieldMode
	relevant   int // 0: none; 1: relevant instead of gold_citations; 2: both
	idStyle    int
	offsets    bool
	anchor     string
	typ        string
	constr     bool
	paraphr    bool
	negatives  bool
	extra      int
}

// gen holds the reusable state of a writer.
type gen struct {
	o       options
	r       *rnd // per-item streams
	r2      *rnd // a second stream, used while r is busy
	scratch []byte
	w       jw
	order   []int
}

func newGen(o options) *gen {
	return &gen{o: o, r: newRnd(), r2: newRnd()}
}

func capitalise(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

func (g *gen) expand(tmpl string, it *goldItem) string {
	if strings.IndexByte(tmpl, '{') < 0 {
		return tmpl
	}
	b := g.scratch[:0]
	for i := 0; i < len(tmpl); {
		if tmpl[i] != '{' {
			j := strings.IndexByte(tmpl[i:], '{')
			if j < 0 {
				j = len(tmpl) - i
			}
			b = append(b, tmpl[i:i+j]...)
			i += j
			continue
		}
		end := strings.IndexByte(tmpl[i:], '}')
		switch tmpl[i+1 : i+end] {
		case "s":
			b = append(b, it.subj.name...)
		case "S":
			b = append(b, capitalise(it.subj.name)...)
		case "n":
			b = strconv.AppendInt(b, int64(it.n), 10)
		case "p":
			b = strconv.AppendInt(b, int64(it.port), 10)
		case "id":
			b = append(b, it.subj.slug...)
		}
		i += end + 1
	}
	g.scratch = b
	return string(b)
}

func appendQID(b []byte, prefix string, n int) []byte {
	b = append(b, prefix...)
	var d [20]byte
	s := strconv.AppendInt(d[:0], int64(n), 10)
	for k := len(s); k < 6; k++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// snippet ids
func appendID(b []byte, style, page, chunk int) []byte {
	switch style {
	case 1:
		b = append(b, "文書"...)
	case 2:
		b = append(b, "handbook/v2.pdf#p"...)
		b = strconv.AppendInt(b, int64(page), 10)
		b = append(b, ":c"...)
		return strconv.AppendInt(b, int64(chunk), 10)
	case 3:
		b = append(b, "doc 7 / p"...)
	default:
		b = append(b, 'p')
	}
	b = strconv.AppendInt(b, int64(page), 10)
	b = append(b, '#')
	return strconv.AppendInt(b, int64(chunk), 10)
}

// idTable holds every snippet id randomID can return: 4 styles × 99 pages ×
// 9 chunks, made once so drawing an id does not allocate.
var idTable = func() (t [4][99 * 9]string) {
	var b []byte
	for style := range t {
		for page := 1; page <= 99; page++ {
			for chunk := 1; chunk <= 9; chunk++ {
				b = appendID(b[:0], style, page, chunk)
				t[style][(page-1)*9+chunk-1] = string(b)
			}
		}
	}
	return t
}()

func (g *gen) randomID(x *rnd, style int) string {
	page, chunk := x.between(1, 99), x.between(1, 9)
	return idTable[style][(page-1)*9+chunk-1]
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// idHash is FNV-1a; offsets and sections of a snippet id derive from it so
// gold and traces agree without sharing state.
func idHash(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

func idOffsets(id string) (int, int) {
	h := idHash(id)
	s := int(h%50000) * 16
	return s, s + 120 + int(h>>20%400)
}

func idSection(id string) string {
	h := idHash(id)
	b := make([]byte, 0, 12)
	b = append(b, "S."...)
	b = strconv.AppendInt(b, int64(1+h>>8%9), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(1+h>>16%6), 10)
	if h>>24%3 == 0 {
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(1+h>>28%4), 10)
	}
	return string(b)
}

func parentSection(s string) string {
	if i := strings.LastIndexByte(s, '.'); i > 1 {
		return s[:i]
	}
	return s
}

var citeCounts = []int{1, 1, 1, 1, 1, 1, 2, 2, 2, 3}
var types = []string{"prose", "code", "table", "figure"}

// gold fills it with item idx.
func (g *gen) gold(it *goldItem, idx int) {
	x := g.r
	// The awkward draw comes from its own stream so the base content of an
	// item does not depend on Awkward.
	x.seed(g.o.seed, uint64(idx), sGoldAwk)
	cats := drawCats(x, g.o.awkward, goldCats, goldTotal)
	prefix := -1
	if cats.has(gUnicodeQID) {
		prefix = x.intn(len(uniQIDPrefixes))
	}
	topic := -1
	if cats.has(gUnicodeSubstr) {
		topic = x.intn(len(uniTopics))
	}
	shortOnly := x.chance(0.4)

	x.seed(g.o.seed, uint64(idx), sGold)
	*it = goldItem{idx: idx, cats: cats, qidPrefix: prefix, fact: -1, topic: -1,
		subs: it.subs[:0], cites: it.cites[:0]}
	it.answerable = x.chance(g.o.answerable)
	it.subj = pick(x, subjects)
	it.n = x.between(2, 99)
	it.port = x.between(1024, 9999)
	if cats.has(gOddIDs) {
		it.idStyle = x.between(1, 3)
	}
	p := "A"
	if prefix >= 0 {
		p = uniQIDPrefixes[prefix].p
	}
	g.scratch = appendQID(g.scratch[:0], p, idx+1)
	it.qid = string(g.scratch)

	if it.answerable || topic >= 0 {
		if topic >= 0 {
			it.topic = topic
			t := &uniTopics[topic]
			it.question = t.q
			it.subs = append(it.subs, t.subs...)
		} else {
			it.fact = x.intn(len(facts))
			f := &facts[it.fact]
			it.question = g.expand(f.q, it)
			it.claim = g.expand(f.c, it)
			// the first substring is the key phrase (>= 5 characters);
			// the others (some short) come along at random
			it.subs = append(it.subs, g.expand(f.subs[0], it))
			for _, s := range f.subs[1:] {
				if x.chance(0.5) {
					it.subs = append(it.subs, g.expand(s, it))
				}
			}
			it.typ = f.typ
		}
	} else {
		it.question = g.expand(pick(x, unanswerable), it)
		if x.chance(0.25) {
			// unanswerable items sometimes keep notes of what was asked
			it.subs = append(it.subs, g.expand(pick(x, hallucinations), it))
		}
	}
	nc := pick(x, citeCounts)
	if !it.answerable && x.chance(0.7) {
		nc = 0
	}
	for len(it.cites) < nc {
		id := g.randomID(x, it.idStyle)
		if !contains(it.cites, id) {
			it.cites = append(it.cites, id)
		}
	}
	if !it.answerable && len(it.subs) == 0 {
		it.subsMode = empty
	}
	if len(it.cites) == 0 {
		it.citesMode = empty
	}
	it.offsets = len(it.cites) > 0 && x.r.Float64() < g.o.offsets
	if len(it.cites) > 0 && x.chance(0.5) {
		it.anchor = idSection(it.cites[0])
		if x.chance(0.3) {
			it.anchor = parentSection(it.anchor)
		}
	}
	if it.typ == "" || x.chance(0.4) {
		it.typ = ""
		if x.chance(0.5) {
			it.typ = pick(x, types)
		}
	}
	it.constr = it.claim != "" && x.chance(0.25)
	it.paraphr = x.chance(0.08)
	it.negatives = x.chance(0.04)

	// awkward content (drawn from the item stream: deterministic too)
	switch {
	case cats.has(gSubstrEmpty):
		it.subs, it.subsMode = it.subs[:0], empty
	case cats.has(gSubstrMissing):
		it.subsMode = missing
	case cats.has(gSubstrNull):
		it.subsMode = null
	case cats.has(gShortSubstr):
		s := pick(x, shortSubs)
		if shortOnly {
			it.subs = append(it.subs[:0], s)
		} else {
			it.subs = append(it.subs, s)
		}
		it.subsMode = present
	}
	switch {
	case cats.has(gCitationsEmpty):
		it.cites, it.citesMode, it.offsets, it.anchor = it.cites[:0], empty, false, ""
	case cats.has(gCitationsMissing):
		it.citesMode = missing
	case cats.has(gCitationsNull):
		it.citesMode = null
	case cats.has(gRelevantAlias):
		it.relevant = x.between(1, 2)
	}
	if cats.has(gExtraFields) {
		it.extra = x.between(1, 4)
	}
}

// Gold member keys in their usual order.
const (
	kQID = iota
	kQuestion
	kAnswerable
	kSubs
	kCites
	kRelevant
	kOffsets
	kAnchor
	kType
	kConstraints
	kParaphrases
	kNegatives
	kExtra
	numGoldKeys
)

// lineStyle sets up the writer for one record's line-level categories.
func (g *gen) lineStyle(x *rnd, cats catSet) {
	w := &g.w
	w.ascii = cats.has(cASCIIEscape)
	if w.ascii {
		w.upperHex = x.chance(0.3)
		w.escSlash = x.chance(0.5)
	}
	w.escKeys = cats.has(cEscapedKeys)
	w.spaced = cats.has(cJSONSpacing)
}

// keyOrder returns the order of n members, shuffled for key_order.
func (g *gen) keyOrder(x *rnd, cats catSet, n int) []int {
	g.order = g.order[:0]
	for i := 0; i < n; i++ {
		g.order = append(g.order, i)
	}
	if cats.has(cKeyOrder) {
		x.r.Shuffle(n, func(i, j int) { g.order[i], g.order[j] = g.order[j], g.order[i] })
	}
	return g.order
}

// beginLine writes what precedes a record (blank lines, padding).
func (g *gen) beginLine(b []byte, x *rnd, cats catSet) ([]byte, int) {
	lines := 0
	if cats.has(cBlankLines) {
		for k := x.between(1, 3); k > 0; k-- {
			b = append(b, pick(x, blankLines)...)
			b = append(b, '\n')
			lines++
		}
	}
	if cats.has(cPadding) {
		b = append(b, pick(x, []string{" ", "\t", "  ", " \t"})...)
	}
	return b, lines
}

func (g *gen) endLine(b []byte, x *rnd, cats catSet) []byte {
	if cats.has(cPadding) {
		b = append(b, pick(x, []string{" ", "\t", "   ", "\t "})...)
	}
	if cats.has(cCRLF) {
		return append(b, '\r', '\n')
	}
	return append(b, '\n')
}

// appendGold appends gold item it as one JSONL line (with whatever blank
// lines its categories put before it).
func (g *gen) appendGold(b []byte, it *goldItem) ([]byte, int) {
	x := g.r2
	x.seed(g.o.seed, uint64(it.idx), sFile)
	b, blank := g.beginLine(b, x, it.cats)
	w := &g.w
	w.reset(b)
	g.lineStyle(x, it.cats)
	w.rootObj()
	for _, k := range g.keyOrder(x, it.cats, numGoldKeys) {
		switch k {
		case kQID:
			w.key("qid")
			w.str(it.qid)
		case kQuestion:
			w.key("question")
			w.str(it.question)
		case kAnswerable:
			w.key("answerable")
			w.boolean(it.answerable)
		case kSubs:
			writeList(w, "gold_claim_substr", it.subs, it.subsMode)
		case kCites:
			if it.relevant != 1 {
				writeList(w, "gold_citations", it.cites, it.citesMode)
			}
		case kRelevant:
			if it.relevant > 0 {
				list := it.cites
				if it.relevant == 2 && len(list) > 0 {
					// the alias adds an id of its own: the union differs
					// from gold_citations alone
					list = append([]string{g.randomID(x, it.idStyle)}, list[1:]...)
				}
				w.key("relevant")
				w.strs(list)
			}
		case kOffsets:
			if it.offsets {
				w.key("relevant_offsets")
				w.obj()
				for _, id := range it.cites {
					s, e := idOffsets(id)
					w.key(id)
					w.arr()
					w.int(s)
					w.int(e)
					w.endArr()
				}
				w.endObj()
			}
		case kAnchor:
			if it.anchor != "" {
				w.key("anchor_section")
				w.str(it.anchor)
			}
		case kType:
			if it.typ != "" {
				w.key("type")
				w.str(it.typ)
			}
		case kConstraints:
			if it.constr {
				w.key("constraints")
				w.arr()
				w.str(it.claim)
				w.endArr()
			}
		case kParaphrases:
			if it.paraphr {
				w.key("paraphrases")
				w.arr()
				w.str("In short: " + it.question)
				w.endArr()
			}
		case kNegatives:
			if it.negatives {
				w.key("negatives")
				w.arr()
				w.str(g.randomID(x, it.idStyle))
				w.endArr()
			}
		case kExtra:
			writeExtraGold(w, x, it)
		}
	}
	w.endObj()
	return g.endLine(w.b, x, it.cats), blank
}

func writeList(w *jw, key string, list []string, mode fieldMode) {
	switch mode {
	case missing:
		return
	case null:
		w.key(key)
		w.null()
	case empty:
		w.key(key)
		w.raw("[]")
	default:
		w.key(key)
		w.strs(list)
	}
}

func writeExtraGold(w *jw, x *rnd, it *goldItem) {
	switch it.extra {
	case 0:
		return
	case 1:
		w.key("meta")
		w.obj()
		w.key("source")
		w.str("handbook v3")
		w.key("reviewed")
		w.boolean(x.chance(0.5))
		w.key("score")
		w.float(x.unif(0, 1), 3)
		w.key("tags")
		w.strs([]string{"faq", it.subj.slug})
		w.key("nested")
		w.raw(`{"a":[1,2.5e3,{"b":null}],"c":""}`)
		w.endObj()
	case 2:
		// Names that differ from real ones only by case are other members.
		w.key("Answerable")
		w.str("n/a")
		w.key("QID")
		w.str("X" + it.qid)
	case 3:
		w.key("notes")
		w.null()
		w.key("answerable_reason")
		w.str("reviewed by two annotators")
	case 4:
		w.key("gold_claim")
		w.str(it.claim)
		w.key("version")
		w.int(3)
	}
}

// WriteGold writes opt.Items gold items as JSONL.
func WriteGold(w io.Writer, opt Options) error {
	o := resolve(opt, false)
	g := newGen(o)
	bw := bufio.NewWriterSize(w, 1<<16)
	var it goldItem
	buf := make([]byte, 0, 1024)
	out := newTail(bw, o)
	for i := 0; i < o.items; i++ {
		g.gold(&it, i)
		it.cats.record(o.stats)
		var blank int
		buf, blank = g.appendGold(buf[:0], &it)
		if err := out.write(buf, blank); err != nil {
			return err
		}
	}
	return out.close(0)
}

func trimEOL(b []byte) []byte {
	b = b[:len(b)-1]
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}
