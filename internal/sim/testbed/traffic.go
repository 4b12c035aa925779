package testbed

import (
	"bufio"
	"container/heap"
	"io"
	"math/rand/v2"
	"strconv"
	"time"
)

// Awkward are the rates of deliveries that are not one clean message per
// run.
type Awkward struct {
	// Late: the share of messages that arrive between LateMin and LateMax
	// after their ts (those past window.max_lateness are counted late).
	Late             float64
	LateMin, LateMax time.Duration
	// Duplicate: the share of messages sent twice (same event_id), the
	// copy up to DuplicateAfter later.
	Duplicate      float64
	DuplicateAfter time.Duration
	// Split: the share of runs sent as a retrieval and an answer half,
	// the second up to SplitGap after the first; a fifth of the time the
	// answer comes first.
	Split    float64
	SplitGap time.Duration
}

// DefaultAwkward: 1 % late by 20 s to 2 min, 0.5 % duplicated, 10 % split.
var DefaultAwkward = Awkward{
	Late: 0.01, LateMin: 20 * time.Second, LateMax: 2 * time.Minute,
	Duplicate: 0.005, DuplicateAfter: 5 * time.Second,
	Split: 0.10, SplitGap: 2 * time.Second,
}

// ArmTraffic is one arm's traffic: its index, and either its own rate of
// runs or the arm whose requests it answers too (a shadow).
type ArmTraffic struct {
	Name  string
	Index *Index
	Rate  float64 // runs (trace events) per second
	// Mirror names the arm whose every request this one answers as well,
	// with the same request_id, up to MirrorLag later (Rate is unused).
	Mirror    string
	MirrorLag time.Duration
}

// Shape is what the traffic of every arm looks like.
type Shape struct {
	Paraphrases, Seeds int     // a visit asks a question Paraphrases × Seeds times
	LambdaStates       float64 // share of visits whose runs state a λ state
	Judged             float64 // share of runs judged by a Scholar and an Auditor
	Awkward            Awkward
}

// DefaultShape: 3 paraphrases × 1 seed a visit, half the visits with λ
// states, 30 % of runs judged, DefaultAwkward.
var DefaultShape = Shape{Paraphrases: 3, Seeds: 1, LambdaStates: 0.5, Judged: 0.3, Awkward: DefaultAwkward}

// Message is one NATS message as a publisher sends it.
type Message struct {
	Subject string
	Data    []byte
	// Arrive is when it reaches the sidecar.
	Arrive time.Time
}

// Traffic generates the arms' messages in arrival order.
type Traffic struct {
	w       *World
	shape   Shape
	arms    []*armGen
	mirrors map[string][]*armGen
	rng     *rand.Rand
	queue   msgQueue
	seq     uint64
}

type armGen struct {
	ArmTraffic
	rng     *rand.Rand
	next    time.Time // time of the next visit's first run
	visits  int64
	runs    int64 // runs generated
	events  int64
	primary bool
}

// NewTraffic starts the arms' traffic at start, drawn with seed.
func NewTraffic(w *World, shape Shape, arms []ArmTraffic, seed uint64, start time.Time) *Traffic {
	tr := &Traffic{w: w, shape: shape, mirrors: map[string][]*armGen{}, rng: rand.New(rand.NewPCG(seed, 0x7af))}
	for i, a := range arms {
		g := &armGen{ArmTraffic: a, rng: rand.New(rand.NewPCG(seed, 0x100+uint64(i))), next: start, primary: a.Mirror == ""}
		tr.arms = append(tr.arms, g)
		if a.Mirror != "" {
			tr.mirrors[a.Mirror] = append(tr.mirrors[a.Mirror], g)
		}
	}
	return tr
}

// Runs is how many runs (trace events, before duplicates and splits) arm
// has been sent.
func (tr *Traffic) Runs(arm string) int64 {
	for _, a := range tr.arms {
		if a.Name == arm {
			return a.runs
		}
	}
	return 0
}

// Until calls emit with every message that arrives before end, in
// arrival order. Data is the caller's until the next call.
func (tr *Traffic) Until(end time.Time, emit func(*Message)) {
	runs := tr.shape.Paraphrases * tr.shape.Seeds
	for {
		// Generate every visit that starts before end: its messages
		// arrive at their ts or later.
		var g *armGen
		for _, a := range tr.arms {
			if a.primary && a.next.Before(end) && (g == nil || a.next.Before(g.next)) {
				g = a
			}
		}
		for len(tr.queue) > 0 && (g == nil || tr.queue[0].Arrive.Before(g.next)) {
			m := heap.Pop(&tr.queue).(*Message)
			if !m.Arrive.Before(end) {
				heap.Push(&tr.queue, m)
				return
			}
			emit(m)
		}
		if g == nil {
			return
		}
		tr.visit(g, runs)
	}
}

// visit asks one question runs times, a run every 1/Rate, in g and the
// arms mirroring it.
func (tr *Traffic) visit(g *armGen, runs int) {
	qi := g.rng.IntN(len(tr.w.Questions))
	stated := g.rng.Float64() < tr.shape.LambdaStates
	step := time.Duration(float64(time.Second) / g.Rate)
	t := g.next
	g.visits++
	for r := range runs {
		req := "r-" + g.Name + "-" + strconv.FormatInt(g.visits, 10) + "-" + strconv.Itoa(r)
		tr.run(g, qi, r, req, stated, t)
		for _, m := range tr.mirrors[g.Name] {
			lag := time.Duration(m.rng.Float64() * float64(m.MirrorLag))
			tr.run(m, qi, r, req, stated, t.Add(lag))
		}
		t = t.Add(step)
	}
	g.next = t
}

// Labels of judgements.
const (
	labelValid        = "VALID"
	labelNotInContext = "NOT_IN_CONTEXT"
	labelReject       = "REJECT"
	labelAbstain      = "ABSTAIN"
)

var judgeLabels = [...]string{labelValid, labelNotInContext, labelReject}

// run is one answer of arm g to question qi, paraphrase/seed r.
func (tr *Traffic) run(g *armGen, qi, r int, req string, stated bool, ts time.Time) {
	q := &tr.w.Questions[qi]
	a := &g.Index.Answers[qi]
	rng := g.rng
	g.runs++
	claim, cites, right, refused := tr.draw(g, qi)
	lambda := ""
	if stated {
		modal := a.Right >= 0.5
		switch {
		case right == modal:
			lambda = "→"
		case rng.Float64() < 0.5:
			lambda = "←"
		default:
			lambda = "<>"
		}
	}
	tr.seq++
	id := g.Name + "-" + strconv.FormatUint(tr.seq, 36)
	aw := &tr.shape.Awkward
	if rng.Float64() < aw.Split {
		first, second := "retrieval", "answer"
		if rng.Float64() < 0.2 {
			first, second = second, first
		}
		gap := time.Duration(rng.Float64() * float64(aw.SplitGap))
		tr.send(g, "rag."+first+"."+g.Name, tr.event(g, qi, r, id, req, ts, first == "retrieval", first == "answer", claim, cites, lambda), ts)
		tr.send(g, "rag."+second+"."+g.Name, tr.event(g, qi, r, id, req, ts, second == "retrieval", second == "answer", claim, cites, lambda), ts.Add(gap))
	} else {
		tr.send(g, "rag.trace."+g.Name, tr.event(g, qi, r, id, req, ts, true, true, claim, cites, lambda), ts)
	}
	if rng.Float64() < tr.shape.Judged {
		truth := labelValid
		switch {
		case refused:
			truth = labelNotInContext
		case !right || !q.Answerable:
			truth = labelReject
		}
		label := func(agent string) string {
			if agent == "scholar" && rng.Float64() < tr.w.P.Abstain {
				return labelAbstain
			}
			if rng.Float64() < q.Ambiguity {
				l := judgeLabels[rng.IntN(len(judgeLabels))]
				for l == truth {
					l = judgeLabels[rng.IntN(len(judgeLabels))]
				}
				return l
			}
			return truth
		}
		for _, agent := range []string{"scholar", "auditor"} {
			b := make([]byte, 0, 128)
			b = append(b, `{"qid":"`...)
			b = append(b, q.QID...)
			b = append(b, `","request_id":"`...)
			b = append(b, req...)
			b = append(b, `","arm":"`...)
			b = append(b, g.Name...)
			b = append(b, `","agent":"`...)
			b = append(b, agent...)
			b = append(b, `","label":"`...)
			b = append(b, label(agent)...)
			b = append(b, `"}`...)
			tr.send(g, "rag.judgement."+g.Name, b, ts.Add(time.Duration(1+rng.IntN(3))*time.Second))
		}
	}
}

// draw is one answer of arm g to question qi: its claim and citations,
// whether it is right, and whether it refuses.
func (tr *Traffic) draw(g *armGen, qi int) (claim string, cites []string, right, refused bool) {
	q := &tr.w.Questions[qi]
	a := &g.Index.Answers[qi]
	rng := g.rng
	right = rng.Float64() < a.Right
	distractor := 0
	if rng.Float64() >= 0.7 {
		distractor = 1
	}
	switch {
	case !q.Answerable && right:
		refused, claim = true, "not in context"
	case !q.Answerable:
		claim, cites = "The answer: "+q.Phrase+" perhaps.", []string{distractorID(qi, distractor)}
	case right:
		claim, cites = "The answer: "+q.Phrase+".", []string{q.Gold[0]}
	default:
		switch a.effectiveWrongMode() {
		case wrongRefuse:
			refused, claim = true, "not in context"
		case wrongDistractor:
			claim, cites = "The answer: something else entirely.", []string{distractorID(qi, distractor)}
		default:
			claim, cites = "See the cited passage.", []string{q.Gold[0]}
		}
	}
	return claim, cites, right, refused
}

// answer is draw's claim and citations.
func (tr *Traffic) answer(g *armGen, qi int) (string, []string) {
	claim, cites, _, _ := tr.draw(g, qi)
	return claim, cites
}

// send queues a message at arrival time at, late or twice as Awkward says.
func (tr *Traffic) send(g *armGen, subject string, data []byte, at time.Time) {
	aw := &tr.shape.Awkward
	rng := g.rng
	if rng.Float64() < aw.Late {
		at = at.Add(aw.LateMin + time.Duration(rng.Float64()*float64(aw.LateMax-aw.LateMin)))
	}
	g.events++
	heap.Push(&tr.queue, &Message{Subject: subject, Data: data, Arrive: at})
	if rng.Float64() < aw.Duplicate {
		heap.Push(&tr.queue, &Message{Subject: subject, Data: data, Arrive: at.Add(time.Duration(rng.Float64() * float64(aw.DuplicateAfter)))})
	}
}

func goldID(qi, j int) string       { return "d" + strconv.Itoa(qi+1) + "-g" + strconv.Itoa(j) }
func distractorID(qi, j int) string { return "d" + strconv.Itoa(qi+1) + "-x" + strconv.Itoa(j) }

// goldOffsets are the byte offsets of gold chunk j of a question.
func goldOffsets(j int) (int64, int64) { return int64(100 * j), int64(100*j + 80) }

// event writes a trace event (or one half of it): the ranked items with
// their ΔS when retrieval, the answer and λ state when answer.
func (tr *Traffic) event(g *armGen, qi, r int, id, req string, ts time.Time, retrieval, answer bool, claim string, cites []string, lambda string) []byte {
	q := &tr.w.Questions[qi]
	a := &g.Index.Answers[qi]
	b := make([]byte, 0, 768)
	b = append(b, `{"ts":"`...)
	b = ts.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","qid":"`...)
	b = append(b, q.QID...)
	b = append(b, `","event_id":"`...)
	b = append(b, id...)
	b = append(b, `","request_id":"`...)
	b = append(b, req...)
	b = append(b, `","arm":"`...)
	b = append(b, g.Name...)
	b = append(b, `","paraphrase":`...)
	b = strconv.AppendInt(b, int64(r%max(tr.shape.Paraphrases, 1)), 10)
	b = append(b, `,"seed":`...)
	b = strconv.AppendInt(b, int64(r/max(tr.shape.Paraphrases, 1)), 10)
	if retrieval {
		type item struct {
			id, section string
			ds          float64
			off         [2]int64
			gold        bool
		}
		// The ranking: the gold chunks first when this index finds them,
		// else below five distractors (or nowhere, for an unanswerable
		// question), then the other distractors; at most 8 items.
		var items [distractors + 2]item
		n := 0
		addGold := func() {
			for j, id := range q.Gold {
				s, e := goldOffsets(j)
				if !a.OffsetsOK {
					s, e = s+50, e+50
				}
				items[n] = item{id: id, section: q.Anchor + ".1", ds: a.GoldDeltaS, off: [2]int64{s, e}, gold: true}
				n++
			}
		}
		if a.RetrievalOK {
			addGold()
		}
		for j := range distractors {
			if j == 5 && !a.RetrievalOK {
				addGold()
			}
			if n == len(items) {
				break
			}
			sec := "S.99." + strconv.Itoa(j)
			if a.DistractorInAnchor[j] {
				sec = q.Anchor + ".2"
			}
			items[n] = item{id: distractorID(qi, j), section: sec, ds: a.Distractor[j], off: [2]int64{int64(1000 + 100*j), int64(1080 + 100*j)}}
			n++
		}
		b = append(b, `,"topk":[`...)
		for i, it := range items[:n] {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":"`...)
			b = append(b, it.id...)
			b = append(b, `","section_id":"`...)
			b = append(b, it.section...)
			b = append(b, `","offsets":[`...)
			b = strconv.AppendInt(b, it.off[0], 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, it.off[1], 10)
			b = append(b, `],"score":`...)
			b = strconv.AppendFloat(b, 1-it.ds, 'f', 4, 64)
			b = append(b, '}')
		}
		b = append(b, `],"delta_s":[`...)
		for i, it := range items[:n] {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, it.ds, 'f', 4, 64)
		}
		b = append(b, ']')
	}
	if answer {
		b = append(b, `,"answer_json":{"claim":"`...)
		b = append(b, claim...)
		b = append(b, `","citations":[`...)
		for i, c := range cites {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, c...)
			b = append(b, '"')
		}
		b = append(b, "]}"...)
		if lambda != "" {
			b = append(b, `,"lambda_state":"`...)
			b = append(b, lambda...)
			b = append(b, '"')
		}
	}
	b = append(b, '}')
	return b
}

// GoldLine is question i's gold item as a JSONL line (SPEC §2.1).
func (w *World) GoldLine(i int) []byte {
	q := &w.Questions[i]
	b := make([]byte, 0, 256)
	b = append(b, `{"qid":"`...)
	b = append(b, q.QID...)
	b = append(b, `","answerable":`...)
	b = strconv.AppendBool(b, q.Answerable)
	b = append(b, `,"question":"What of fact `...)
	b = strconv.AppendInt(b, int64(i+1), 10)
	b = append(b, `?","type":"`...)
	b = append(b, w.P.Types[q.Type].Name...)
	b = append(b, `","anchor_section":"`...)
	b = append(b, q.Anchor...)
	b = append(b, `","gold_claim_substr":`...)
	if q.Answerable {
		b = append(b, `["`...)
		b = append(b, q.Phrase...)
		b = append(b, `"]`...)
	} else {
		b = append(b, `[]`...)
	}
	b = append(b, `,"gold_citations":[`...)
	for j, id := range q.Gold {
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, id...)
		b = append(b, '"')
	}
	b = append(b, ']')
	if q.Offsets {
		b = append(b, `,"relevant_offsets":{`...)
		for j, id := range q.Gold {
			if j > 0 {
				b = append(b, ',')
			}
			s, e := goldOffsets(j)
			b = append(b, '"')
			b = append(b, id...)
			b = append(b, `":[`...)
			b = strconv.AppendInt(b, s, 10)
			b = append(b, ',')
			b = strconv.AppendInt(b, e, 10)
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, '}')
	return b
}

// msgQueue orders messages by arrival.
type msgQueue []*Message

func (q msgQueue) Len() int           { return len(q) }
func (q msgQueue) Less(i, j int) bool { return q[i].Arrive.Before(q[j].Arrive) }
func (q msgQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *msgQueue) Push(x any)        { *q = append(*q, x.(*Message)) }
func (q *msgQueue) Pop() any {
	old := *q
	m := old[len(old)-1]
	*q = old[:len(old)-1]
	return m
}

// With adds an arm whose traffic starts at start, and returns tr.
func (tr *Traffic) With(a ArmTraffic, start time.Time) *Traffic {
	g := &armGen{ArmTraffic: a, rng: rand.New(rand.NewPCG(tr.rng.Uint64(), 0x100+uint64(len(tr.arms)))), next: start, primary: a.Mirror == ""}
	tr.arms = append(tr.arms, g)
	if a.Mirror != "" {
		tr.mirrors[a.Mirror] = append(tr.mirrors[a.Mirror], g)
	}
	return tr
}

// SetIndex answers arm's visits that start from now on (after the last
// Until) from index: a deployment that changes during an analysis.
func (tr *Traffic) SetIndex(arm string, index *Index) {
	for _, a := range tr.arms {
		if a.Name == arm {
			a.Index = index
		}
	}
}

// WriteRuns writes a trace file as an offline evaluation logs one: each
// question of the world asked runs times (paraphrases × seeds) against
// index, one trace line a run, no λ states, nothing late, duplicated or
// split; seed draws the answers.
func (w *World) WriteRuns(out io.Writer, index *Index, arm string, runs int, seed uint64) error {
	tr := NewTraffic(w, Shape{Paraphrases: runs, Seeds: 1}, nil, seed, time.Time{})
	g := &armGen{ArmTraffic: ArmTraffic{Name: arm, Index: index, Rate: 1}, rng: rand.New(rand.NewPCG(seed, 0x3f1))}
	bw := bufio.NewWriter(out)
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for qi := range w.Questions {
		for r := range runs {
			req := "r-" + strconv.Itoa(qi) + "-" + strconv.Itoa(r)
			claim, cites := tr.answer(g, qi)
			tr.seq++
			line := tr.event(g, qi, r, arm+"-"+strconv.FormatUint(tr.seq, 36), req, t, true, true, claim, cites, "")
			if _, err := bw.Write(append(line, '\n')); err != nil {
				return err
			}
			t = t.Add(time.Second)
		}
	}
	return bw.Flush()
}
