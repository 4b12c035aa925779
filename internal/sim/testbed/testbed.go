// Package testbed models the traffic of a RAG service as canary analyses
// meet it, to judge them on data that behaves like the real thing rather
// than on streams where every question is alike:
//
//   - a gold set of questions of several content types, 20 % of them
//     unanswerable, each with its gold citations, claim phrase, anchor
//     section and (for most answerable ones) byte offsets;
//   - an index is what one deployment retrieves and answers: retrieval is
//     fixed per question and index (the gold chunk is in the top 5 or it is
//     not, every item has its ΔS), and each question's answer is right
//     with a probability of its own, drawn from a Beta whose mass sits near
//     0 and 1, so that most questions are almost always right or almost
//     always wrong; a wrong answer refuses, cites a distractor, or cites
//     the gold chunk without the gold phrase, as that question's pipeline
//     tends to;
//   - traffic visits questions at random and asks each one as several
//     runs (paraphrases × seeds) a second apart, so λ groups come from
//     real repeated runs; half the visits state a λ state, the rest leave
//     the group rule to the runs' decisions and citations; 30 % of runs are
//     judged by a Scholar and an Auditor, who disagree on a question as
//     often as its own ambiguity makes them;
//   - events are the wire format (SPEC §2): trace events, split retrieval
//     and answer halves, judgement events, with late arrivals, duplicates
//     and split halves at set rates, for the real decoder, joiner and
//     checks to read.
//
// Every draw comes from seeded PCG streams: a seed gives the same world,
// indexes and traffic.
package testbed

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Params are the model's parameters. Default holds the values the
// README's tables were measured with.
type Params struct {
	Questions    int
	Unanswerable float64 // share of questions with no answer in the corpus
	Types        []TypeParams
	// Difficulty is the Beta concentration (a + b) of each question's
	// chance of a right answer: the smaller, the more of the mass sits
	// near 0 and 1.
	Difficulty float64
	// RefusalRight is the mean chance that an unanswerable question is
	// refused (the right answer), with the same concentration.
	RefusalRight float64
	// WrongModes are the shares of a question's wrong answers: it refuses,
	// cites a distractor, or cites the gold chunk without the gold phrase.
	WrongModes [3]float64
	Offsets    float64 // share of answerable questions whose gold has byte offsets
	OffsetsOK  float64 // share of those whose chunk offsets are within tolerance
	// DeltaS of a gold item is logit-normal with its type's median and
	// this spread (of the logit); distractors lie DistractorGap higher on
	// average.
	DeltaSSpread, DistractorGap float64
	// Ambiguity is the mean chance that an agent mislabels a judged run of
	// a question, per question from a Beta of concentration Difficulty.
	Ambiguity float64
	Abstain   float64 // chance that the Scholar abstains
}

// TypeParams are one content type's share of the questions and its base
// rates.
type TypeParams struct {
	Name        string
	Share       float64
	RetrievalOK float64 // chance the gold chunk is in an index's top 5
	RightAnswer float64 // mean chance of a right answer when it is
	DeltaS      float64 // median ΔS of gold items
}

// Default: 3,000 questions, 20 % unanswerable, four content types; a
// question's chance of a right answer is Beta with concentration 0.3
// around its type's mean (about 0.88 overall when retrieval finds the
// gold chunk), so about 86 % of questions are right or wrong at least
// 95 % of the time.
var Default = Params{
	Questions:    3000,
	Unanswerable: 0.20,
	Types: []TypeParams{
		{Name: "prose", Share: 0.55, RetrievalOK: 0.93, RightAnswer: 0.93, DeltaS: 0.30},
		{Name: "code", Share: 0.15, RetrievalOK: 0.88, RightAnswer: 0.90, DeltaS: 0.34},
		{Name: "table", Share: 0.15, RetrievalOK: 0.85, RightAnswer: 0.88, DeltaS: 0.36},
		{Name: "figure", Share: 0.15, RetrievalOK: 0.80, RightAnswer: 0.85, DeltaS: 0.40},
	},
	Difficulty:    0.3,
	RefusalRight:  0.95,
	WrongModes:    [3]float64{0.3, 0.5, 0.2},
	Offsets:       0.6,
	OffsetsOK:     0.97,
	DeltaSSpread:  0.5,
	DistractorGap: 0.15,
	Ambiguity:     0.06,
	Abstain:       0.004,
}

// Question is one gold item and what the model knows of it.
type Question struct {
	QID        string
	Type       int // index into Params.Types
	Answerable bool
	Gold       []string // gold chunk ids
	Anchor     string   // section of the gold chunks
	Offsets    bool     // the gold item has relevant_offsets
	Phrase     string   // the gold claim phrase
	// Ambiguity is the chance that an agent mislabels a judged run.
	Ambiguity float64
}

// World is a gold set.
type World struct {
	P         Params
	Questions []Question
}

// NewWorld draws a gold set from p with seed.
func NewWorld(p Params, seed uint64) *World {
	rng := rand.New(rand.NewPCG(seed, 0x90d))
	w := &World{P: p, Questions: make([]Question, p.Questions)}
	var cum []float64
	total := 0.0
	for _, t := range p.Types {
		total += t.Share
		cum = append(cum, total)
	}
	for i := range w.Questions {
		q := &w.Questions[i]
		q.QID = "q" + strconv.Itoa(i+1)
		u := rng.Float64() * total
		q.Type = min(len(cum)-1, sort(cum, u))
		q.Answerable = rng.Float64() >= p.Unanswerable
		q.Anchor = "S." + strconv.Itoa(1+i%17) + "." + strconv.Itoa(1+i%5)
		q.Phrase = "fact " + strconv.Itoa(i+1) + " holds"
		if q.Answerable {
			for j := range 1 + rng.IntN(2) {
				q.Gold = append(q.Gold, goldID(i, j))
			}
			q.Offsets = rng.Float64() < p.Offsets
		}
		q.Ambiguity = beta(rng, p.Ambiguity, p.Difficulty)
	}
	return w
}

// sort is the first index of cum at or above u.
func sort(cum []float64, u float64) int {
	i, _ := slices.BinarySearch(cum, u)
	return i
}

// beta draws from a Beta of mean m and concentration k (a + b), by two
// gamma draws.
func beta(rng *rand.Rand, m, k float64) float64 {
	a, b := m*k, (1-m)*k
	x, y := gamma(rng, a), gamma(rng, b)
	if x+y == 0 {
		if rng.Float64() < m {
			return 1
		}
		return 0
	}
	return x / (x + y)
}

// gamma draws from Gamma(a, 1) (Marsaglia and Tsang; for a < 1 boosted by
// U^(1/a)).
func gamma(rng *rand.Rand, a float64) float64 {
	if a <= 0 {
		return 0
	}
	if a < 1 {
		return gamma(rng, a+1) * math.Pow(rng.Float64(), 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// Wrong-answer modes.
const (
	wrongRefuse      = 0
	wrongDistractor  = 1
	wrongUncontained = 2
)

// Distractors per question in an index's ranking.
const distractors = 6

// Answers is how one index retrieves and answers one question.
type Answers struct {
	RetrievalOK bool    // the gold chunks are in the top 5
	Right       float64 // chance of a right answer (an unanswerable question: of refusing)
	WrongMode   int
	GoldDeltaS  float64
	Distractor  [distractors]float64 // ΔS of each distractor
	// DistractorInAnchor: the distractor lies in the anchor section.
	DistractorInAnchor [distractors]bool
	OffsetsOK          bool
}

// Index is one deployment's answers to every question.
type Index struct {
	W       *World
	Answers []Answers
}

// NewIndex draws an index over w with seed.
func (w *World) NewIndex(seed uint64) *Index {
	rng := rand.New(rand.NewPCG(seed, 0x1de))
	ix := &Index{W: w, Answers: make([]Answers, len(w.Questions))}
	for i := range ix.Answers {
		ix.Answers[i] = w.drawAnswers(rng, i)
	}
	return ix
}

func (w *World) drawAnswers(rng *rand.Rand, i int) Answers {
	p := &w.P
	q := &w.Questions[i]
	t := &p.Types[q.Type]
	var a Answers
	a.RetrievalOK = q.Answerable && rng.Float64() < t.RetrievalOK
	switch {
	case !q.Answerable:
		a.Right = beta(rng, p.RefusalRight, p.Difficulty)
	case a.RetrievalOK:
		a.Right = beta(rng, t.RightAnswer, p.Difficulty)
	}
	u := rng.Float64()
	switch {
	case u < p.WrongModes[0]:
		a.WrongMode = wrongRefuse
	case u < p.WrongModes[0]+p.WrongModes[1]:
		a.WrongMode = wrongDistractor
	default:
		a.WrongMode = wrongUncontained
	}
	logit := math.Log(t.DeltaS/(1-t.DeltaS)) + p.DeltaSSpread*rng.NormFloat64()
	a.GoldDeltaS = 1 / (1 + math.Exp(-logit))
	for j := range a.Distractor {
		gap := p.DistractorGap * (0.5 + rng.Float64()) * (1 + 0.2*float64(j))
		a.Distractor[j] = min(0.99, a.GoldDeltaS+gap)
		a.DistractorInAnchor[j] = rng.Float64() < 0.3
	}
	a.OffsetsOK = q.Offsets && rng.Float64() < p.OffsetsOK
	return a
}

// Redraw returns a copy of ix whose answers to a share of the questions,
// picked with seed, are drawn anew from the same distribution: a
// different index of the same quality.
func (ix *Index) Redraw(share float64, seed uint64) *Index {
	rng := rand.New(rand.NewPCG(seed, 0x7ed))
	out := &Index{W: ix.W, Answers: slices.Clone(ix.Answers)}
	for i := range out.Answers {
		if rng.Float64() < share {
			out.Answers[i] = ix.W.drawAnswers(rng, i)
		}
	}
	return out
}

// Expected are the model's expected values of the main metrics over
// uniform traffic: what a long stream of an index measures.
type Expected struct {
	Precision, CHR, OverRefusal, UnderRefusal, Recall5, Coverage float64
}

// Expected works out ix's expected metrics.
func (ix *Index) Expected() Expected {
	var s sums
	for i := range ix.Answers {
		s.add(ix.contrib(i), 1)
	}
	return s.expected()
}

// sums are the expected counts behind Expected, over every question.
type sums struct {
	ship, precise, hit, answ, refA, unans, shipU, rec, covered float64
}

func (s *sums) add(o sums, sign float64) {
	s.ship += sign * o.ship
	s.precise += sign * o.precise
	s.hit += sign * o.hit
	s.answ += sign * o.answ
	s.refA += sign * o.refA
	s.unans += sign * o.unans
	s.shipU += sign * o.shipU
	s.rec += sign * o.rec
	s.covered += sign * o.covered
}

func (s *sums) expected() Expected {
	return Expected{
		Precision: s.precise / s.ship, CHR: s.hit / s.ship, OverRefusal: s.refA / s.answ, UnderRefusal: s.shipU / s.unans,
		Recall5: s.rec / s.answ, Coverage: s.covered / s.answ,
	}
}

// contrib is question i's expected counts per run.
func (ix *Index) contrib(i int) sums {
	q, a := &ix.W.Questions[i], &ix.Answers[i]
	var s sums
	if !q.Answerable {
		s.unans = 1
		s.shipU = 1 - a.Right
		s.ship = 1 - a.Right
		return s
	}
	s.answ = 1
	right := 0.0
	if a.RetrievalOK {
		right = a.Right
		s.rec = 1
	}
	wrong := 1 - right
	s.ship, s.precise, s.hit, s.covered = right, right, right, right
	switch a.effectiveWrongMode() {
	case wrongRefuse:
		s.refA = wrong
	case wrongDistractor:
		s.ship += wrong
		s.covered += wrong * a.anchorShare()
	case wrongUncontained:
		s.ship += wrong
		s.hit += wrong
		s.covered += wrong
	}
	return s
}

// anchorShare is the chance that a distractor a wrong answer cites lies in
// the anchor section (it cites the first distractor 70 % of the time).
func (a *Answers) anchorShare() float64 {
	s := 0.0
	if a.DistractorInAnchor[0] {
		s += 0.7
	}
	if a.DistractorInAnchor[1] {
		s += 0.3
	}
	return s
}

// effectiveWrongMode: without the gold chunks retrieved, an answer cannot
// cite them.
func (a *Answers) effectiveWrongMode() int {
	if !a.RetrievalOK && a.WrongMode == wrongUncontained {
		return wrongDistractor
	}
	return a.WrongMode
}

// Worse returns a copy of ix whose precision is lower by points (0.03 =
// 3 points) in expectation: questions picked with seed among those it
// answers well lose their gold chunks from the top 5, as an index change
// that breaks some documents' chunks would, so recall, chr and coverage
// fall with precision.
func (ix *Index) Worse(points float64, seed uint64) *Index {
	rng := rand.New(rand.NewPCG(seed, 0xbad))
	out := &Index{W: ix.W, Answers: slices.Clone(ix.Answers)}
	var s sums
	for i := range out.Answers {
		s.add(out.contrib(i), 1)
	}
	target := s.expected().Precision - points
	for _, i := range rng.Perm(len(out.Answers)) {
		if s.expected().Precision <= target {
			break
		}
		a := &out.Answers[i]
		if !a.RetrievalOK || a.Right < 0.5 {
			continue
		}
		s.add(out.contrib(i), -1)
		a.RetrievalOK = false
		a.Right = 0
		if a.WrongMode == wrongRefuse && rng.Float64() < 0.5 {
			a.WrongMode = wrongDistractor
		}
		s.add(out.contrib(i), 1)
	}
	return out
}

// StretchDeltaS returns a copy of ix whose ΔS above the median of its
// gold items' ΔS is stretched so that their 90th percentile rises by by:
// the tail worsens, the median stays.
func (ix *Index) StretchDeltaS(by float64) *Index {
	out := &Index{W: ix.W, Answers: slices.Clone(ix.Answers)}
	vals := make([]float64, len(ix.Answers))
	for i, a := range ix.Answers {
		vals[i] = a.GoldDeltaS
	}
	slices.Sort(vals)
	med, p90 := vals[len(vals)/2], vals[len(vals)*9/10]
	f := func(x float64) float64 {
		if x <= med {
			return x
		}
		return min(0.999, med+(x-med)*(1+by/(p90-med)))
	}
	for i := range out.Answers {
		a := &out.Answers[i]
		a.GoldDeltaS = f(a.GoldDeltaS)
		for j := range a.Distractor {
			a.Distractor[j] = f(a.Distractor[j])
		}
	}
	return out
}
