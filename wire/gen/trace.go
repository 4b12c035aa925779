package gen

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/shadoweval/shadoweval/vocab"
)

// answer is one trace before it is written.
type answer struct {
	qid      string
	qidMode  int // 0: qid; 1: q_id; 2: qid and a different q_id
	other    string
	q        string
	queryKey string // "q" or "query"

	retrieved []string
	retMode   fieldMode
	topk      bool
	text      bool // topk items carry text (TraceSource)
	good      bool // retrieval and answer were drawn as right

	ansMode   fieldMode // present, missing, null, empty ({})
	claim     string
	claimMode fieldMode // present, missing, null
	cites     []string
	citesMode fieldMode // present, missing, null, empty
	citesRaw  string    // a non-array citations literal, when set
	citeOffs  bool

	rich      bool
	deltaS    []float64
	dsKey     string
	lambda    string
	lamKey    string
	dsCited   float64
	hasCited  bool
	numForms  bool
	extra     int
	jitterBad bool
}

var retrievedCounts = []int{1, 2, 2, 3, 3, 4, 4, 5, 5, 5, 6, 8, 10, 12}

// buildTrace draws the trace of gold item it from x.
func (g *gen) buildTrace(a *answer, it *goldItem, x *rnd, cats catSet, quality float64) {
	*a = answer{qid: it.qid, q: it.question, queryKey: "q",
		retrieved: a.retrieved[:0], cites: a.cites[:0], deltaS: a.deltaS[:0],
		dsKey: "delta_s", lamKey: "lambda_state"}
	correct := x.chance(quality)
	a.good = correct
	// gold ids the pipeline can know: gold_citations, or the alias
	gold := it.cites
	if it.citesMode == missing || it.citesMode == null {
		gold = gold[:0]
	}

	// retrieval
	n := pick(x, retrievedCounts)
	place := 0 // 0: top 5; 1: anywhere, maybe dropped; 2: none
	switch {
	case !it.answerable:
		place = pick(x, []int{1, 2, 2})
	case correct:
		place = 0
	default:
		place = pick(x, []int{0, 1, 1, 2})
	}
	if place == 0 && n < len(gold) {
		n = len(gold)
	}
	nd := n
	if place == 0 {
		nd = n - len(gold)
	}
	for len(a.retrieved) < nd {
		id := g.randomID(x, it.idStyle)
		if !contains(gold, id) && !contains(a.retrieved, id) {
			a.retrieved = append(a.retrieved, id)
		}
	}
	for _, id := range gold {
		var pos int
		switch place {
		case 0:
			// at most 5-len(gold): later insertions push earlier ones
			// down by one each, and all must stay in the top 5
			pos = x.intn(min(len(a.retrieved), 5-len(gold)) + 1)
		case 1:
			pos = x.intn(len(a.retrieved) + 3)
			if pos > len(a.retrieved) {
				continue // not retrieved
			}
		default:
			continue
		}
		a.retrieved = append(a.retrieved, "")
		copy(a.retrieved[pos+1:], a.retrieved[pos:])
		a.retrieved[pos] = id
	}
	var goldRetrieved string
	for _, id := range a.retrieved {
		if contains(gold, id) {
			goldRetrieved = id
			break
		}
	}
	// retrievedDistractor is a retrieved id that is not gold, or "".
	retrievedDistractor := func() string {
		for _, id := range a.retrieved {
			if !contains(gold, id) && x.chance(0.5) {
				return id
			}
		}
		for _, id := range a.retrieved {
			if !contains(gold, id) {
				return id
			}
		}
		return ""
	}
	// distractor is a non-gold id, retrieved if possible.
	distractor := func() string {
		if id := retrievedDistractor(); id != "" {
			return id
		}
		for {
			id := g.randomID(x, it.idStyle)
			if !contains(gold, id) && !contains(a.retrieved, id) {
				return id
			}
		}
	}

	// answer
	refuse := func() {
		a.claim = refusalToken
		a.cites = a.cites[:0]
	}
	switch {
	case !it.answerable && correct:
		refuse()
	case !it.answerable:
		if it.topic >= 0 {
			a.claim = pick(x, uniTopics[it.topic].claims).text
		} else {
			a.claim = g.expand(pick(x, hallucinations), it)
		}
		if len(a.retrieved) > 0 {
			a.cites = append(a.cites, pick(x, a.retrieved))
		}
	case correct:
		a.claim = g.rightClaim(x, it)
		switch {
		case len(gold) == 0:
			if x.chance(0.3) && len(a.retrieved) > 0 {
				a.cites = append(a.cites, a.retrieved[0])
			}
		case goldRetrieved != "":
			a.cites = append(a.cites, goldRetrieved)
			if x.chance(0.3) {
				if d := retrievedDistractor(); d != "" {
					a.cites = append(a.cites, d)
				}
			}
		}
	default:
		switch x.intn(10) {
		case 0, 1, 2: // over-refusal
			refuse()
		case 3, 4, 5, 6: // misses the gold substrings
			a.claim = g.wrongClaim(x, it)
			if goldRetrieved != "" && x.chance(0.5) {
				a.cites = append(a.cites, goldRetrieved)
			} else {
				a.cites = append(a.cites, distractor())
			}
		default: // right claim, wrong evidence
			a.claim = g.rightClaim(x, it)
			outside := ""
			for _, id := range gold {
				if !contains(a.retrieved, id) {
					outside = id
				}
			}
			if outside != "" && x.chance(0.5) {
				a.cites = append(a.cites, outside) // a gold id it did not retrieve
			} else {
				a.cites = append(a.cites, distractor())
			}
		}
	}

	// awkward content
	if cats.has(tQIDAlias) {
		a.qidMode = 1
	}
	if cats.has(tQIDAndAlias) {
		a.qidMode = 2
		a.other = "B" + it.qid
	}
	if cats.has(tRetrievedDup) && len(a.retrieved) > 0 {
		k := x.intn(len(a.retrieved))
		pos := x.intn(len(a.retrieved) + 1)
		id := a.retrieved[k]
		a.retrieved = append(a.retrieved, "")
		copy(a.retrieved[pos+1:], a.retrieved[pos:])
		a.retrieved[pos] = id
	}
	switch {
	case cats.has(tRetrievedNull):
		a.retMode = null
	case cats.has(tRetrievedMissing):
		a.retMode = missing
	case cats.has(tRetrievedEmpty):
		a.retrieved, a.retMode = a.retrieved[:0], empty
	case cats.has(tTopKOnly):
		a.retMode = missing
		a.topk = true
	}
	if cats.has(tRefusalVariant) {
		a.claim = pick(x, refusals).text
		a.cites = a.cites[:0]
	}
	if cats.has(tClaimCase) {
		a.claim = asciiCase(a.claim, x.intn(4))
	}
	if cats.has(tClaimUnicode) {
		a.claim = unicodeVariant(a.claim, x)
	}
	switch {
	case cats.has(tClaimNull):
		a.claimMode = null
	case cats.has(tClaimMissing):
		a.claimMode = missing
	case cats.has(tClaimEmpty):
		a.claim = ""
	}
	if cats.has(tCitationsOutside) {
		id := g.randomID(x, it.idStyle)
		for _, gid := range gold {
			if !contains(a.retrieved, gid) {
				id = gid
			}
		}
		if contains(a.retrieved, id) {
			id += "x"
		}
		a.cites = append(a.cites, id)
	}
	if cats.has(tCitationsDup) {
		if len(a.cites) == 0 && len(a.retrieved) > 0 {
			a.cites = append(a.cites, a.retrieved[0])
		}
		if len(a.cites) > 0 {
			a.cites = append(a.cites, a.cites[0])
		}
	}
	if cats.has(tCitationCase) && len(a.cites) > 0 {
		a.cites[0] = asciiCase(a.cites[0], 0)
	}
	switch {
	case cats.has(tCitationsNull):
		a.citesMode = null
	case cats.has(tCitationsMissing):
		a.citesMode = missing
	case cats.has(tCitationsEmpty):
		a.citesMode = empty
	case cats.has(tCitationsString):
		id := goldRetrieved
		if id == "" && len(a.retrieved) > 0 {
			id = a.retrieved[0]
		}
		if id == "" {
			id = "p1#1"
		}
		if x.chance(0.3) && len(a.retrieved) > 1 {
			id += "," + a.retrieved[1]
		}
		a.citesRaw = quoteJSON(id)
	case cats.has(tCitationsEmptyString):
		a.citesRaw = `""`
	case cats.has(tCitationsFalsy):
		a.citesRaw = pick(x, []string{"false", "0", "0.0", "-0", "{}", "0e5"})
	case cats.has(tCitationsTruthy):
		a.citesRaw = pick(x, []string{"true", "1", `{"id":"p1#2"}`, "0.5", "-1", "2e0"})
	}
	switch {
	case cats.has(tAnswerNull):
		a.ansMode = null
	case cats.has(tAnswerMissing):
		a.ansMode = missing
	case cats.has(tAnswerEmpty):
		a.ansMode = empty
	}
	if cats.has(tFieldAliases) {
		a.queryKey = "query"
		a.dsKey = "ΔS"
		a.lamKey = "λ_state"
		a.rich = true
	}
	if cats.has(tNumberForms) {
		a.numForms = true
		a.rich = true
	}
	if cats.has(tExtraFields) {
		a.extra = x.between(1, 3)
	}

	// live-path fields
	if x.chance(g.o.rich) {
		a.rich = true
	}
	if a.rich && x.chance(0.25) {
		a.topk = true
	}
	if a.retMode != present && !cats.has(tTopKOnly) {
		// topk carries the same ids as retrieved_ids: none here
		a.topk = false
	}
	if a.rich || a.topk {
		g.liveFields(a, it, x, correct)
	}
}

// liveFields draws ΔS, λ state and offsets quality.
func (g *gen) liveFields(a *answer, it *goldItem, x *rnd, good bool) {
	a.rich = true
	for _, id := range a.retrieved {
		var ds float64
		switch {
		case good && contains(it.cites, id):
			ds = x.unif(0.05, 0.35)
		case good:
			ds = x.unif(0.25, 0.7)
		default:
			ds = x.unif(0.45, 0.98)
		}
		a.deltaS = append(a.deltaS, ds)
	}
	if len(a.cites) > 0 {
		for i, id := range a.retrieved {
			if id == a.cites[0] {
				a.dsCited, a.hasCited = a.deltaS[i], true
				break
			}
		}
	}
	switch {
	case good:
		a.lambda = vocab.LambdaConvergent.Symbol()
		if x.chance(0.1) {
			a.lambda = vocab.LambdaConvergent.String()
		}
	case x.chance(0.2):
		a.lambda = pick(x, lambdaWords)
	default:
		a.lambda = pick(x, lambdaStates)
	}
	a.jitterBad = !good && x.chance(0.5)
	a.citeOffs = len(a.cites) > 0 && x.chance(0.3)
}

func (g *gen) rightClaim(x *rnd, it *goldItem) string {
	if it.topic >= 0 {
		t := &uniTopics[it.topic]
		var ok []string
		for _, c := range t.claims {
			if c.match {
				ok = append(ok, c.text)
			}
		}
		if len(ok) > 0 {
			return pick(x, ok)
		}
		return t.claims[0].text
	}
	if it.claim == "" {
		return g.expand(pick(x, vague), it)
	}
	return it.claim
}

func (g *gen) wrongClaim(x *rnd, it *goldItem) string {
	if it.topic >= 0 {
		for _, c := range uniTopics[it.topic].claims {
			if !c.match && x.chance(0.7) {
				return c.text
			}
		}
	}
	return g.expand(pick(x, vague), it)
}

// asciiCase changes the case of ASCII letters only: 0 upper, 1 lower,
// 2 swap, 3 title.
func asciiCase(s string, mode int) string {
	b := []byte(s)
	start := true
	for i, c := range b {
		isLower, isUpper := 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z'
		switch mode {
		case 0:
			if isLower {
				b[i] = c - 32
			}
		case 1:
			if isUpper {
				b[i] = c + 32
			}
		case 2:
			if isLower {
				b[i] = c - 32
			} else if isUpper {
				b[i] = c + 32
			}
		case 3:
			if start && isLower {
				b[i] = c - 32
			} else if !start && isUpper {
				b[i] = c + 32
			}
		}
		start = c == ' '
	}
	return string(b)
}

func unicodeVariant(s string, x *rnd) string {
	switch x.intn(5) {
	case 0: // Kelvin sign for K: Python's lower() gives k again
		return strings.ReplaceAll(asciiCase(s, 0), "K", "\u212a")
	case 1: // dotted capital I: lower() gives i + U+0307
		return strings.ReplaceAll(asciiCase(s, 0), "I", "İ")
	case 2: // decomposed accents break containment of plain e
		return strings.ReplaceAll(s, "e", "e\u0301")
	case 3:
		return pick(x, []string{"🚀 ", "ℹ️ ", "【注】", "Ω "}) + s
	default:
		return s + pick(x, decorations)
	}
}

func quoteJSON(s string) string {
	var w jw
	return string(w.appendStr(nil, s))
}

// Trace member keys in their usual order.
const (
	tkQID = iota
	tkQ
	tkRetrieved
	tkAnswer
	tkTopK
	tkDeltaS
	tkDeltaSCited
	tkLambda
	tkArm
	tkEventID
	tkRequestID
	tkParaphrase
	tkSeed
	tkTS
	tkLatency
	tkIndexHash
	tkExtra
	numTraceKeys
)

// liveInfo carries the TraceSource fields of one event.
type liveInfo struct {
	arm        string
	eventID    string
	requestID  string
	paraphrase int
	seed       int
	ts         string
	latency    float64
	indexHash  string
}

func (g *gen) writeNum(w *jw, x *rnd, v float64, prec int, odd bool) {
	if !odd {
		w.float(v, prec)
		return
	}
	switch x.intn(4) {
	case 0:
		w.sep()
		w.b = strconv.AppendFloat(w.b, v, 'e', prec, 64)
	case 1:
		w.sep()
		w.b = strconv.AppendFloat(w.b, v, 'E', -1, 64)
	case 2:
		w.float(v, 12)
	default:
		w.sep()
		w.b = strconv.AppendFloat(w.b, v, 'g', prec, 64)
	}
}

// appendTrace writes answer a of item it as one JSONL line.
func (g *gen) appendTrace(b []byte, a *answer, it *goldItem, x *rnd, cats catSet, arm string, live *liveInfo) ([]byte, int) {
	blank := 0
	if live == nil {
		b, blank = g.beginLine(b, x, cats)
	}
	w := &g.w
	w.reset(b)
	g.lineStyle(x, cats)
	w.rootObj()
	for _, k := range g.keyOrder(x, cats, numTraceKeys) {
		switch k {
		case tkQID:
			switch a.qidMode {
			case 0:
				w.key("qid")
				w.str(a.qid)
			case 1:
				w.key("q_id")
				w.str(a.qid)
			case 2:
				w.key("qid")
				w.str(a.qid)
				w.key("q_id")
				w.str(a.other)
			}
		case tkQ:
			w.key(a.queryKey)
			w.str(a.q)
		case tkRetrieved:
			writeList(w, "retrieved_ids", a.retrieved, a.retMode)
		case tkAnswer:
			g.writeAnswer(w, a, x, cats)
		case tkTopK:
			if a.topk {
				g.writeTopK(w, a, it, x)
			}
		case tkDeltaS:
			// one ΔS per top-k item: only when the ids were sent
			if a.rich && len(a.deltaS) > 0 && (a.retMode == present || a.topk) {
				w.key(a.dsKey)
				w.arr()
				for _, v := range a.deltaS {
					g.writeNum(w, x, v, 3, a.numForms)
				}
				w.endArr()
			}
		case tkDeltaSCited:
			if a.hasCited && (live != nil || x.chance(0.3)) {
				w.key("delta_s_cited")
				g.writeNum(w, x, a.dsCited, 3, a.numForms)
			}
		case tkLambda:
			if a.rich {
				w.key(a.lamKey)
				w.str(a.lambda)
			}
		case tkArm:
			if arm != "" {
				w.key("arm")
				w.str(arm)
			}
		case tkEventID:
			if live != nil {
				w.key("event_id")
				w.str(live.eventID)
			}
		case tkRequestID:
			if live != nil {
				w.key("request_id")
				w.str(live.requestID)
			}
		case tkParaphrase:
			if live != nil {
				w.key("paraphrase")
				w.int(live.paraphrase)
			}
		case tkSeed:
			if live != nil {
				w.key("seed")
				w.int(live.seed)
			}
		case tkTS:
			if live != nil && live.ts != "" {
				w.key("ts")
				w.str(live.ts)
			}
		case tkLatency:
			if live != nil {
				w.key("latency_ms")
				g.writeNum(w, x, live.latency, 1, a.numForms)
			}
		case tkIndexHash:
			if live != nil {
				w.key("index_hash")
				w.str(live.indexHash)
			}
		case tkExtra:
			writeExtraTrace(w, a)
		}
	}
	w.endObj()
	if live != nil {
		return w.b, 0
	}
	return g.endLine(w.b, x, cats), blank
}

func (g *gen) writeAnswer(w *jw, a *answer, x *rnd, cats catSet) {
	switch a.ansMode {
	case missing:
		return
	case null:
		w.key("answer_json")
		w.null()
		return
	case empty:
		w.key("answer_json")
		w.raw("{}")
		return
	}
	w.key("answer_json")
	w.obj()
	swap := cats.has(cKeyOrder) && x.chance(0.5)
	for part := 0; part < 3; part++ {
		p := part
		if swap {
			p = 2 - part
		}
		switch p {
		case 0:
			switch a.claimMode {
			case null:
				w.key("claim")
				w.null()
			case present:
				w.key("claim")
				w.str(a.claim)
			}
		case 1:
			if a.citesRaw != "" {
				w.key("citations")
				w.raw(a.citesRaw)
			} else {
				writeList(w, "citations", a.cites, a.citesMode)
			}
		case 2:
			if a.citeOffs && a.citesMode == present && a.citesRaw == "" {
				// offsets of the first citation (one member: citations
				// may repeat an id, member names must not)
				s, e := jitter(x, a.cites[0], a.jitterBad)
				w.key("citation_offsets")
				w.obj()
				w.key(a.cites[0])
				w.arr()
				w.int(s)
				w.int(e)
				w.endArr()
				w.endObj()
			}
		}
	}
	w.endObj()
}

// jitter moves the offsets of id a little (within the 30-byte tolerance)
// or, for bad evidence, a lot.
func jitter(x *rnd, id string, bad bool) (int, int) {
	s, e := idOffsets(id)
	d := 20
	if bad {
		d = 150
	}
	s += x.between(-d, d)
	e += x.between(-d, d)
	if s < 0 {
		s = 0
	}
	if e < s {
		e = s
	}
	return s, e
}

func (g *gen) writeTopK(w *jw, a *answer, it *goldItem, x *rnd) {
	w.key("topk")
	w.arr()
	score := x.unif(0.8, 0.99)
	for i, id := range a.retrieved {
		w.obj()
		w.key("id")
		w.str(id)
		w.key("score")
		g.writeNum(w, x, score, 4, a.numForms)
		score -= x.unif(0.001, 0.08)
		if score < 0 {
			score = 0
		}
		w.key("section_id")
		w.str(idSection(id))
		// A live retriever knows where each of its chunks is; the files'
		// rich traces leave offsets out at random.
		if a.text || i < 3 || x.chance(0.3) {
			s, e := jitter(x, id, a.jitterBad)
			w.key("offsets")
			w.arr()
			w.int(s)
			w.int(e)
			w.endArr()
		}
		if a.text {
			w.key("text")
			w.str(g.chunkText(id, it))
		}
		w.endObj()
	}
	w.endArr()
}

// chunkText is the text of snippet id as retrieved for item it: a gold
// snippet of an answerable item holds the passage its right claim comes
// from (the first gold id the claim itself, the others another fact about
// the same subject), so that a grounded answer is found in its evidence
// (seed 004 triage); any other snippet has the fixed text of its id.
func (g *gen) chunkText(id string, it *goldItem) string {
	k := slices.Index(it.cites, id)
	switch {
	case k < 0 || !it.answerable:
		return snippetText(id)
	case it.topic >= 0:
		return rightTopicClaim(&uniTopics[it.topic])
	case it.fact < 0:
		return snippetText(id)
	}
	h := idHash(id)
	if k > 0 {
		// another fact about the subject: not the item's own
		f := (it.fact + 1 + int(h%uint64(len(facts)-1))) % len(facts)
		return g.expand(facts[f].c, it)
	}
	return it.claim + " " + g.expand(passageTails[h%uint64(len(passageTails))], it)
}

// passageTails follow the claim in a gold snippet.
var passageTails = []string{
	"This applies to every deployment of {s}.",
	"The behaviour is the same in staging and production.",
	"See the operations guide of {s} for the full procedure.",
	"Earlier releases of {s} behaved the same way.",
	"Changing this requires a restart of {s}.",
}

// snippetText is a fixed pseudo text of a snippet.
func snippetText(id string) string {
	h := idHash(id)
	f := &facts[h%uint64(len(facts))]
	it := goldItem{subj: subjects[h>>8%uint64(len(subjects))], n: int(2 + h>>16%98), port: int(1024 + h>>24%8976)}
	var g gen
	return g.expand(f.c, &it)
}

// rightTopicClaim is the first claim of t that holds its gold substring.
func rightTopicClaim(t *uniTopic) string {
	for _, c := range t.claims {
		if c.match {
			return c.text
		}
	}
	return t.claims[0].text
}

func writeExtraTrace(w *jw, a *answer) {
	switch a.extra {
	case 1:
		w.key("debug")
		w.raw(`{"model":"m-7","tokens":1234,"ok":true,"stops":["\n\n"],"t":1.5e-3}`)
	case 2:
		// top-level claim and citations are not the answer
		w.key("claim")
		w.str("ignored top-level claim")
		w.key("citations")
		w.strs([]string{"p1#1"})
	case 3:
		w.key("Qid")
		w.str("Z" + a.qid)
		w.key("retrieved")
		w.raw("null")
	}
}

// traceRec is one trace line to write: variant v of item's traces, or its
// orphan.
type traceRec struct {
	item    int
	variant int
	orphan  bool
	cats    catSet
	arm     string
}

const window = 128

// plan draws the awkward categories of item i's traces.
func (g *gen) plan(x *rnd, i int) (cats catSet, count int, deferLast bool) {
	x.seed(g.o.seed, uint64(i), sTracePlan)
	cats = drawCats(x, g.o.awkward, traceFileCats, traceTotal)
	count = 1
	switch {
	case cats.has(tMissing):
		count = 0
	case cats.has(tDuplicate):
		count = x.between(2, 3)
		deferLast = x.chance(0.3)
	}
	return cats, count, deferLast
}

func (g *gen) orphanQID(x *rnd, it *goldItem) string {
	digits := func(prefix string, n int) string {
		return string(appendQID(nil, prefix, n))
	}
	switch x.intn(5) {
	case 1:
		if it.qidPrefix < 0 {
			return digits("a", it.idx+1)
		}
		if o := uniQIDPrefixes[it.qidPrefix].other; o != "" {
			return digits(o, it.idx+1)
		}
	case 2:
		return it.qid + " "
	case 3:
		if it.qidPrefix >= 0 {
			switch uniQIDPrefixes[it.qidPrefix].p {
			case "é":
				return digits("e\u0301", it.idx+1)
			case "e\u0301":
				return digits("é", it.idx+1)
			}
		}
		return " " + it.qid
	case 4:
		return digits("ORPHAN-", it.idx+1)
	}
	return digits("A", g.o.items+1+it.idx)
}

// WriteTraces writes traces for the gold items of WriteGold with the same
// Seed and Items (and Awkward, Answerable): normally one per item, with
// awkward items getting none, two or three (the last one in file order is
// the one the reference scorer keeps), an orphan for a qid not in gold, or
// awkward content.
func WriteTraces(w io.Writer, opt Options) error {
	o := resolve(opt, false)
	g := newGen(o)
	bw := bufio.NewWriterSize(w, 1<<16)
	plan := newRnd()
	var recs, deferred []traceRec
	var it goldItem
	var a answer
	buf := make([]byte, 0, 2048)
	x := newRnd()
	armOf := func(i, v int) string {
		if len(o.arms) == 0 {
			return ""
		}
		return o.arms[int(mix(o.seed^uint64(i)<<8^uint64(v))%uint64(len(o.arms)))]
	}
	out := newTail(bw, o)
	emit := func(list []traceRec) error {
		for _, rec := range list {
			g.gold(&it, rec.item)
			var qid string
			if rec.orphan {
				x.seed(o.seed, uint64(rec.item), sOrphan)
				qid = g.orphanQID(x, &it)
			} else {
				x.seed(o.seed, uint64(rec.item), sTrace+uint64(rec.variant))
			}
			g.buildTrace(&a, &it, x, rec.cats, o.quality)
			if rec.orphan {
				a.qid = qid
				a.other = "B" + qid
			}
			var blank int
			buf, blank = g.appendTrace(buf[:0], &a, &it, x, rec.cats, rec.arm, nil)
			if err := out.write(buf, blank); err != nil {
				return err
			}
		}
		return nil
	}
	for start := 0; start < o.items; start += window {
		end := min(start+window, o.items)
		recs = append(recs[:0], deferred...)
		deferred = deferred[:0]
		for i := start; i < end; i++ {
			cats, count, deferLast := g.plan(plan, i)
			cats.record(o.stats)
			for v := 0; v < count; v++ {
				rec := traceRec{item: i, variant: v, cats: cats, arm: armOf(i, v)}
				if v == count-1 && deferLast && !o.inOrder {
					deferred = append(deferred, rec)
				} else {
					recs = append(recs, rec)
				}
			}
			if cats.has(tOrphan) {
				recs = append(recs, traceRec{item: i, orphan: true, cats: cats, arm: armOf(i, 9)})
			}
		}
		if !o.inOrder {
			plan.seed(o.seed, uint64(start), sShuffle)
			plan.r.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		}
		if err := emit(recs); err != nil {
			return err
		}
	}
	if err := emit(deferred); err != nil {
		return err
	}
	return out.close(1)
}

// tail writes records one behind, so that the last one can lose its
// newline (some files end without one).
type tail struct {
	bw      *bufio.Writer
	o       options
	pending []byte
	has     bool
}

func newTail(bw *bufio.Writer, o options) *tail {
	return &tail{bw: bw, o: o, pending: make([]byte, 0, 2048)}
}

func (t *tail) write(rec []byte, blank int) error {
	if t.o.stats != nil {
		t.o.stats.Records++
		t.o.stats.Lines += 1 + blank
	}
	if t.has {
		if _, err := t.bw.Write(t.pending); err != nil {
			return err
		}
	}
	t.pending = append(t.pending[:0], rec...)
	t.has = true
	return nil
}

func (t *tail) close(stream uint64) error {
	if t.has {
		fx := newRnd()
		fx.seed(t.o.seed, stream, sFile)
		if fx.chance(t.o.awkward / 4) {
			t.pending = trimEOL(t.pending)
		}
		if _, err := t.bw.Write(t.pending); err != nil {
			return err
		}
	}
	return t.bw.Flush()
}
