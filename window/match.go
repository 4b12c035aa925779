package window

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/shadoweval/shadoweval/vocab"
)

// Matching pairs a candidate arm's observations with a baseline arm's
// (SPEC §5.3): each candidate event with a baseline event of the same
// request when both arms answered it, else of the same qid, in arrival
// order, each event used once, within a horizon of event time. A pair
// turns every per-event proportion into a 3×3 table of what each side was
// (not counted, counted as a miss, counted as a hit), which is all a paired
// comparison reads; pairs of the same qid also make paired λ groups (the
// runs of both sides judged together), and judgement pairs are matched
// the same way for agreement, κ and the abstain rate.
//
// Which events pair depends on ids, times and arrival order only, never on
// what they scored, so the pairs are a fair sample of both arms.
//
// The tables are counts: they merge by addition (replicas, checkpoints)
// and do not depend on the order of the pairs.

// Cells of a matched pair's table, per side.
const (
	cellOut  = 0 // not in the metric's denominator
	cellMiss = 1 // in the denominator, not in the numerator
	cellHit  = 2 // in both
)

// Table is a metric's 3×3 table of pairs: [candidate cell][baseline
// cell], cells 0 (not counted), 1 (counted, not in the numerator) and 2
// (in the numerator).
type Table [3][3]int64

// Pairs is the number of pairs in which at least one side was counted.
func (t *Table) Pairs() int64 {
	var n int64
	for a := range 3 {
		for b := range 3 {
			if a != cellOut || b != cellOut {
				n += t[a][b]
			}
		}
	}
	return n
}

func (t *Table) add(o *Table, sign int64) {
	for a := range 3 {
		for b := range 3 {
			t[a][b] += sign * o[a][b]
		}
	}
}

// JudgedTable is the matched judgement pairs: [candidate Scholar·4 +
// Auditor][baseline Scholar·4 + Auditor], labels in JudgementLabels order.
type JudgedTable [nLabels * nLabels][nLabels * nLabels]int64

// A visit is a candidate's runs of one qid that follow each other closely
// (paraphrases × seeds asked together): its pairs share the question, so
// their differences are not independent of each other, and the paired
// comparison takes each visit as one observation, the mean of its pairs'
// differences. Visits are independent: each asks a question drawn afresh.
//
// maxVisitPairs bounds a visit, so that its summary fits in 8 bits a
// field; a qid asked without pause that long is split into visits of
// that many pairs.
const maxVisitPairs = 255

// VisitSummary is what one visit's pairs say of one paired series, packed
// 8 bits a field: over its pairs, the candidate's and the baseline's
// numerators and denominators (nc, dc, nb, db), the pairs counted on both
// sides (both) and their numerators (ncBoth, nbBoth).
type VisitSummary uint64

// Fields unpacks v.
func (v VisitSummary) Fields() (nc, dc, nb, db, both, ncBoth, nbBoth int) {
	f := func(i uint) int { return int(v>>(8*i)) & 0xff }
	return f(0), f(1), f(2), f(3), f(4), f(5), f(6)
}

// invalid says whether v could not have been written: more than 56 bits,
// or numerators above their denominators, pairs counted on both sides
// above either side's.
func (v VisitSummary) invalid() bool {
	nc, dc, nb, db, both, ncBoth, nbBoth := v.Fields()
	return v>>56 != 0 || nc > dc || nb > db || both > min(dc, db) || ncBoth > both || nbBoth > both || ncBoth > nc || nbBoth > nb
}

// Pairs is the number of v's pairs counted on at least one side.
func (v VisitSummary) Pairs() int {
	_, dc, _, db, both, _, _ := v.Fields()
	return dc + db - both
}

// visitAcc accumulates a VisitSummary's fields.
type visitAcc [7]uint8

func (a *visitAcc) summary() VisitSummary {
	var v VisitSummary
	for i, x := range a {
		v |= VisitSummary(x) << (8 * i)
	}
	return v
}

// The ΔS-cited values of a visit's pairs are kept too, binned, for the
// paired comparison of the cited-ΔS quantiles: which side of a quantile
// each value falls on is only known when the comparison is judged, so a
// visit is kept whole, as its pairs' bins (a CitedVisit).

// CitedBins is how many equal bins [0, 1] is cut into for the ΔS-cited
// values of matched pairs: a quantile read from them is off by at most one
// bin, 1/1024, which the comparison widens its interval by.
const CitedBins = 1024

// NoCited stands for a side of a pair without a ΔS-cited value.
const NoCited = 0xffff

// citedBin is the bin of a ΔS-cited value, clamped to [0, 1].
func citedBin(v float64) uint16 {
	return uint16(max(0, min(int(v*CitedBins), CitedBins-1)))
}

// CitedVisit is a visit's pairs with a ΔS-cited value on some side: 4 bytes
// a pair, its candidate's and its baseline's bin (big-endian, NoCited for
// none), pairs in byte order, so that alike visits are one key.
type CitedVisit string

// Pairs is the number of pairs in v.
func (v CitedVisit) Pairs() int { return len(v) / 4 }

// Pair is the bins of v's i-th pair, NoCited for a side without a value.
func (v CitedVisit) Pair(i int) (c, b uint16) {
	return uint16(v[4*i])<<8 | uint16(v[4*i+1]), uint16(v[4*i+2])<<8 | uint16(v[4*i+3])
}

// invalid says whether v could not have been written.
func (v CitedVisit) invalid() bool {
	if len(v) == 0 || len(v)%4 != 0 || v.Pairs() > maxVisitPairs {
		return true
	}
	for i := range v.Pairs() {
		c, b := v.Pair(i)
		if c == NoCited && b == NoCited || c != NoCited && c >= CitedBins || b != NoCited && b >= CitedBins {
			return true
		}
		if i > 0 && v[4*(i-1):4*i] > v[4*i:4*i+4] {
			return true
		}
	}
	return false
}

// Matches are the counts of a candidate arm's observations matched with a
// baseline arm's.
type Matches struct {
	// Visits holds, per paired series (PairedSeries, in order), how many
	// closed visits had each summary.
	Visits []map[VisitSummary]int64
	// Cited holds how many closed visits had each CitedVisit.
	Cited map[CitedVisit]int64
	// Lambda holds paired λ groups: [0] convergent, [1] flipping, each
	// side's cell 1 (no) or 2 (yes).
	Lambda [2]Table
	Judged JudgedTable
	// How the events and the judgement pairs were matched.
	ByRequest, ByQID             int64
	JudgedByRequest, JudgedByQID int64
	nk                           int
	citedGen                     uint64 // CitedGeneration
	// With logCited, the changes to Cited visit by visit are listed in
	// citedLog until TakeCitedChanges, and citedBase changes on any other
	// change of Cited.
	logCited  bool
	citedLog  []CitedChange
	citedBase uint64
}

// CitedChange is a change to Matches.Cited: N more visits like Visit (N < 0:
// fewer).
type CitedChange struct {
	Visit CitedVisit
	N     int64
}

// TakeCitedChanges returns the changes to Cited since the last call,
// visit by visit (valid until m next changes), and a generation of the
// changes not listed: while it stays the same, Cited is what it was at the
// last call plus those changes, so that a reader can keep what it unpacked
// and apply them. Only the counts of a Matched view list their changes.
func (m *Matches) TakeCitedChanges() (changes []CitedChange, gen uint64) {
	changes = m.citedLog
	m.citedLog = m.citedLog[:0]
	return changes, m.citedBase
}

// citedChanged records a change to Cited that is not listed.
func (m *Matches) citedChanged() {
	m.citedGen++
	m.citedBase++
	m.citedLog = m.citedLog[:0]
}

// addCited adds n visits like v to Cited, listing the change.
func (m *Matches) addCited(v CitedVisit, n int64) {
	if m.logCited {
		m.citedGen++
		m.citedLog = append(m.citedLog, CitedChange{Visit: v, N: n})
	} else {
		m.citedChanged()
	}
	if c := m.Cited[v] + n; c != 0 {
		m.Cited[v] = c
	} else {
		delete(m.Cited, v)
	}
}

// NewMatches returns empty counts for the cut-offs ks.
func NewMatches(ks []int) *Matches {
	m := &Matches{Visits: make([]map[VisitSummary]int64, len(PairedSeries(ks))), Cited: map[CitedVisit]int64{}, nk: len(ks)}
	for i := range m.Visits {
		m.Visits[i] = map[VisitSummary]int64{}
	}
	return m
}

// Add adds sign × o to m (same cut-offs).
func (m *Matches) Add(o *Matches, sign int64) {
	for i, vs := range o.Visits {
		for v, n := range vs {
			if c := m.Visits[i][v] + sign*n; c != 0 {
				m.Visits[i][v] = c
			} else {
				delete(m.Visits[i], v)
			}
		}
	}
	for v, n := range o.Cited {
		m.addCited(v, sign*n)
	}
	m.addTables(o, sign)
}

// addTables adds sign × o's fixed-size counts to m: all but the visits.
func (m *Matches) addTables(o *Matches, sign int64) {
	m.Lambda[0].add(&o.Lambda[0], sign)
	m.Lambda[1].add(&o.Lambda[1], sign)
	for a := range m.Judged {
		for b := range m.Judged[a] {
			m.Judged[a][b] += sign * o.Judged[a][b]
		}
	}
	m.ByRequest += sign * o.ByRequest
	m.ByQID += sign * o.ByQID
	m.JudgedByRequest += sign * o.JudgedByRequest
	m.JudgedByQID += sign * o.JudgedByQID
}

// empty reports whether m counts nothing.
func (m *Matches) empty() bool {
	for _, vs := range m.Visits {
		if len(vs) != 0 {
			return false
		}
	}
	return len(m.Cited) == 0 && m.Lambda == [2]Table{} && m.Judged == JudgedTable{} &&
		m.ByRequest == 0 && m.ByQID == 0 && m.JudgedByRequest == 0 && m.JudgedByQID == 0
}

// tables is a copy of m's fixed-size counts, without the visits.
func (m *Matches) tables() *Matches {
	c := *m
	c.Visits, c.Cited = nil, nil
	return &c
}

func (m *Matches) clone() *Matches {
	c := *m
	c.Visits = make([]map[VisitSummary]int64, len(m.Visits))
	for i, vs := range m.Visits {
		c.Visits[i] = maps.Clone(vs)
	}
	c.Cited = maps.Clone(m.Cited)
	c.citedLog = nil
	return &c
}

func (m *Matches) reset() {
	for _, vs := range m.Visits {
		clear(vs)
	}
	clear(m.Cited)
	visits, cited := m.Visits, m.Cited
	*m = Matches{Visits: visits, Cited: cited, nk: m.nk, citedGen: m.citedGen, citedBase: m.citedBase, logCited: m.logCited, citedLog: m.citedLog}
	m.citedChanged()
}

// PairedSeries are the series a matched pair of events counts in a table:
// every per-event proportion (PerEvent) at the cut-offs ks, in the order
// of MetricNames.
// The slice is shared: callers read it.
func PairedSeries(ks []int) []Series {
	var buf [64]byte
	key := buf[:0]
	for _, k := range ks {
		key = strconv.AppendInt(append(key, ' '), int64(k), 10)
	}
	if m := pairedSeriesOf.Load(); m != nil {
		if v, ok := (*m)[string(key)]; ok { // no allocation for the lookup
			return v
		}
	}
	var out []Series
	for s := range allSeries(ks) {
		if s.Row.PerEvent() {
			out = append(out, s)
		}
	}
	pairedSeriesMu.Lock()
	defer pairedSeriesMu.Unlock()
	next := map[string][]Series{string(key): out}
	if m := pairedSeriesOf.Load(); m != nil {
		maps.Copy(next, *m)
	}
	pairedSeriesOf.Store(&next)
	return out
}

// pairedSeriesOf keeps PairedSeries by cut-offs, replaced whole when a new
// set comes (a process has one or two): every paired check of a verdict
// read looks its series up, and a read of it must not allocate.
var (
	pairedSeriesOf atomic.Pointer[map[string][]Series]
	pairedSeriesMu sync.Mutex
)

// pairedCell works out one side's cell of a paired series from what a
// matched event keeps.
type pairedCell struct {
	// cited: the visits' ΔS-cited pseudo-series (visits.go), every
	// cited value a hit.
	cited bool
	den   CounterSet
	num   CounterSet // a plain counter; 0 for a block
	block Counter    // cRecallStrict, cTriageLabel or cHitAtK, with index i
	i     int
	// uncounted: no check reads the series (UncountedSeries), so its
	// visits are not kept.
	uncounted bool
}

func (p *pairedCell) cell(e *matchEvent) int {
	if p.cited {
		if e.cited == 0 {
			return cellOut
		}
		return cellHit
	}
	if e.set&p.den == 0 {
		return cellOut
	}
	hit := false
	switch p.block {
	case cRecallStrict:
		hit = e.recall&(1<<p.i) != 0
	case cHitAtK:
		hit = e.hit&(1<<p.i) != 0
	case cTriageLabel:
		hit = int(e.triage) == p.i
	default:
		hit = e.set&p.num != 0
	}
	if hit {
		return cellHit
	}
	return cellMiss
}

func pairedCells(ks []int) []pairedCell {
	var out []pairedCell
	for _, s := range PairedSeries(ks) {
		p := pairedCell{den: 1 << s.Row.den}
		switch s.Row.num {
		case cRecallStrict, cTriageLabel, cHitAtK:
			p.block, p.i = s.Row.num, s.index
		default:
			p.num = 1 << s.Row.num
		}
		out = append(out, p)
	}
	return out
}

// uncount marks the cells of the series named in uncounted.
func uncount(cells []pairedCell, ks []int, uncounted []string) []pairedCell {
	for i, s := range PairedSeries(ks) {
		cells[i].uncounted = slices.Contains(uncounted, s.Name)
	}
	return cells
}

// VisitSeries is the paired series (of PairedSeries(ks)) whose visits a
// check of s reads, in its pairs and in each arm's visit sums: its own for
// a per-event proportion, its denominator's for a mean that
// VisitClustered; ok is false for any other.
func VisitSeries(ks []int, s Series) (name string, ok bool) {
	ps := PairedSeries(ks)
	if s.Kind == Mean {
		if i := visitDenSeries(ks, s.Row.den); i >= 0 && VisitClustered(s) {
			return ps[i].Name, true
		}
		return "", false
	}
	if !s.Row.PerEvent() {
		return "", false
	}
	for _, p := range ps {
		if p.Name == s.Name {
			return p.Name, true
		}
	}
	return "", false
}

// UncountedSeries are the paired series (of PairedSeries(ks)) whose visits
// no check of the metrics reads (VisitSeries): an event changes the visits
// of every series it counts in, and keeping those of a series no check
// reads would be work for nothing.
func UncountedSeries(ks []int, metrics []string) []string {
	read := map[string]bool{}
	for _, m := range metrics {
		if s, ok := Lookup(m); ok {
			if name, ok := VisitSeries(ks, s); ok {
				read[name] = true
			}
		}
	}
	var out []string
	for _, s := range PairedSeries(ks) {
		if !read[s.Name] {
			out = append(out, s.Name)
		}
	}
	return out
}

// matchesState is the serialised form of Matches: series by name, so that
// a build with other cut-offs restores the series both have.
type matchesState struct {
	// Visits maps a series' name to its visit summaries (in decimal) and
	// their counts.
	Visits map[string]map[string]int64 `json:"visits,omitempty"`
	// Cited maps a CitedVisit, in hexadecimal, to its count.
	Cited           map[string]int64 `json:"cited,omitempty"`
	Tables          map[string]Table `json:"tables,omitempty"` // the paired λ groups
	Judged          map[string]int64 `json:"judged,omitempty"` // "c/b" label pair indices → count
	ByRequest       int64            `json:"by_request,omitempty"`
	ByQID           int64            `json:"by_qid,omitempty"`
	JudgedByRequest int64            `json:"judged_by_request,omitempty"`
	JudgedByQID     int64            `json:"judged_by_qid,omitempty"`
}

const (
	lambdaConvergenceTable = "lambda_convergence"
	lambdaFlipTable        = "lambda_flip_rate"
)

func (m *Matches) state(ks []int) matchesState {
	s := matchesState{Visits: map[string]map[string]int64{}, Tables: map[string]Table{}, ByRequest: m.ByRequest, ByQID: m.ByQID,
		JudgedByRequest: m.JudgedByRequest, JudgedByQID: m.JudgedByQID}
	for i, sr := range PairedSeries(ks) {
		if len(m.Visits[i]) == 0 {
			continue
		}
		vs := make(map[string]int64, len(m.Visits[i]))
		for v, n := range m.Visits[i] {
			vs[strconv.FormatUint(uint64(v), 10)] = n
		}
		s.Visits[sr.Name] = vs
	}
	for v, n := range m.Cited {
		if s.Cited == nil {
			s.Cited = make(map[string]int64, len(m.Cited))
		}
		s.Cited[hex.EncodeToString([]byte(v))] = n
	}
	for i, name := range []string{lambdaConvergenceTable, lambdaFlipTable} {
		if m.Lambda[i] != (Table{}) {
			s.Tables[name] = m.Lambda[i]
		}
	}
	for a := range m.Judged {
		for b, n := range m.Judged[a] {
			if n != 0 {
				if s.Judged == nil {
					s.Judged = map[string]int64{}
				}
				s.Judged[strconv.Itoa(a)+"/"+strconv.Itoa(b)] = n
			}
		}
	}
	return s
}

// EncodeMatches writes m with its series named for the cut-offs ks.
func EncodeMatches(m *Matches, ks []int) ([]byte, error) { return json.Marshal(m.state(ks)) }

// DecodeMatches reads what EncodeMatches wrote for the cut-offs ks. A
// series this build does not pair is refused, as a count a checkpoint
// would otherwise lose; a series it pairs and the data lacks starts at 0.
func DecodeMatches(b []byte, ks []int) (*Matches, error) {
	var s matchesState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("window: matched pairs: %w", err)
	}
	m := NewMatches(ks)
	at := map[string]int{}
	for i, sr := range PairedSeries(ks) {
		at[sr.Name] = i
	}
	for name, vs := range s.Visits {
		i, ok := at[name]
		if !ok {
			return nil, fmt.Errorf("window: matched pairs: series %q is not one this build pairs", name)
		}
		for key, n := range vs {
			v, err := strconv.ParseUint(key, 10, 64)
			if err != nil || n <= 0 || VisitSummary(v).invalid() {
				return nil, fmt.Errorf("window: matched pairs: %s: visit %q counted %d", name, key, n)
			}
			m.Visits[i][VisitSummary(v)] = n
		}
	}
	for key, n := range s.Cited {
		b, err := hex.DecodeString(key)
		if v := CitedVisit(b); err != nil || n <= 0 || v.invalid() || hex.EncodeToString(b) != key {
			return nil, fmt.Errorf("window: matched pairs: cited visit %q counted %d", key, n)
		}
		m.Cited[CitedVisit(b)] = n
	}
	for name, t := range s.Tables {
		for a := range 3 {
			for b := range 3 {
				if t[a][b] < 0 {
					return nil, fmt.Errorf("window: matched pairs: %s has a count of %d", name, t[a][b])
				}
			}
		}
		switch name {
		case lambdaConvergenceTable:
			m.Lambda[0] = t
		case lambdaFlipTable:
			m.Lambda[1] = t
		default:
			return nil, fmt.Errorf("window: matched pairs: table %q is not one this build keeps", name)
		}
	}
	for key, n := range s.Judged {
		var a, b int
		if _, err := fmt.Sscanf(key, "%d/%d", &a, &b); err != nil || a < 0 || b < 0 || a >= len(m.Judged) || b >= len(m.Judged) || n < 0 || key != strconv.Itoa(a)+"/"+strconv.Itoa(b) {
			return nil, fmt.Errorf("window: matched pairs: judged cell %q of %d", key, n)
		}
		m.Judged[a][b] = n
	}
	for _, v := range []int64{s.ByRequest, s.ByQID, s.JudgedByRequest, s.JudgedByQID} {
		if v < 0 {
			return nil, fmt.Errorf("window: matched pairs: a count of %d", v)
		}
	}
	m.ByRequest, m.ByQID, m.JudgedByRequest, m.JudgedByQID = s.ByRequest, s.ByQID, s.JudgedByRequest, s.JudgedByQID
	return m, nil
}

// Match sides.
const (
	Candidate = 0
	Baseline  = 1
)

// matchEvent is a waiting observation: what a pair needs of it.
type matchEvent struct {
	seq    uint64 // its place in arrival order
	t      int64  // event time, Unix ns
	key    uint64 // the qid's
	req    uint64 // the request's hash; 0 none
	next   uint64 // the next waiting event of the same side and qid (seq); 0 none
	set    CounterSet
	recall uint32
	hit    uint32 // Observation.HitAtK
	triage int8
	side   uint8
	used   bool
	lambda bool // a λ run
	run    LambdaRun
	// cited is 1 + the bin (citedBin) of its ΔS-cited value; 0: none.
	cited uint16
}

// chain is the waiting events of one side and qid, oldest first.
type chain struct{ head, tail uint64 }

// pairQueue holds waiting events of both sides in arrival order, finds
// each arrival its partner, and forgets events past the horizon or beyond
// its capacity (oldest first).
type pairQueue struct {
	horizon  int64
	capacity int
	ring     []matchEvent // by seq & (len−1)
	first    uint64       // oldest seq still held
	next     uint64       // seq of the next arrival (from 1)
	newest   int64        // latest event time seen
	chains   [2]map[uint64]chain
	requests [2]map[uint64]uint64 // request hash → seq
	// Expired counts waiting events forgotten unmatched.
	expired int64
}

func newPairQueue(horizon int64, capacity int) *pairQueue {
	q := &pairQueue{horizon: horizon, capacity: max(capacity, 1), first: 1, next: 1, newest: math.MinInt64}
	for s := range 2 {
		q.chains[s] = map[uint64]chain{}
		q.requests[s] = map[uint64]uint64{}
	}
	return q
}

func (q *pairQueue) at(seq uint64) *matchEvent { return &q.ring[seq&uint64(len(q.ring)-1)] }

// held reports whether seq is still in the ring.
func (q *pairQueue) held(seq uint64) bool { return seq >= q.first && seq < q.next }

// offer finds e a partner of the other side, or keeps e waiting. It
// returns the partner (valid until the next offer) and whether it was
// found by request.
func (q *pairQueue) offer(e *matchEvent) (partner *matchEvent, byRequest bool) {
	q.newest = max(q.newest, e.t)
	q.expire()
	other := 1 - e.side
	if e.req != 0 {
		if seq, ok := q.requests[other][e.req]; ok {
			delete(q.requests[other], e.req)
			if p := q.at(seq); q.held(seq) && !p.used && p.key == e.key && q.within(p, e) {
				p.used = true
				return p, true
			}
		}
	}
	if p := q.takeByQID(other, e); p != nil {
		return p, false
	}
	q.wait(e)
	return nil, false
}

func (q *pairQueue) within(p, e *matchEvent) bool {
	d := p.t - e.t
	return d <= q.horizon && -d <= q.horizon
}

// takeByQID takes the oldest waiting event of side and e's qid within the
// horizon; used ones at the head of the chain are dropped from it.
func (q *pairQueue) takeByQID(side uint8, e *matchEvent) *matchEvent {
	c, ok := q.chains[side][e.key]
	if !ok {
		return nil
	}
	for seq := c.head; seq != 0; {
		p := q.at(seq)
		if !q.held(seq) || p.seq != seq {
			break
		}
		next := p.next
		if p.used {
			if seq == c.head {
				c.head = next
			}
			seq = next
			continue
		}
		if q.within(p, e) {
			p.used = true
			if p.req != 0 && q.requests[side][p.req] == seq {
				delete(q.requests[side], p.req)
			}
			if seq == c.head {
				c.head = next
			}
			q.setChain(side, e.key, c)
			return p
		}
		seq = next
	}
	q.setChain(side, e.key, c)
	return nil
}

func (q *pairQueue) setChain(side uint8, key uint64, c chain) {
	if c.head == 0 {
		delete(q.chains[side], key)
		return
	}
	q.chains[side][key] = c
}

// wait keeps e, making room first.
func (q *pairQueue) wait(e *matchEvent) {
	if int(q.next-q.first) >= q.capacity {
		q.drop()
	}
	if int(q.next-q.first) >= len(q.ring) {
		q.grow()
	}
	e.seq = q.next
	e.next, e.used = 0, false
	q.next++
	*q.at(e.seq) = *e
	c := q.chains[e.side][e.key]
	if c.head == 0 {
		c.head = e.seq
	} else if t := q.at(c.tail); q.held(c.tail) && t.seq == c.tail {
		t.next = e.seq
	} else {
		c.head = e.seq
	}
	c.tail = e.seq
	q.chains[e.side][e.key] = c
	if e.req != 0 {
		q.requests[e.side][e.req] = e.seq
	}
}

func (q *pairQueue) grow() {
	n := max(64, 2*len(q.ring))
	ring := make([]matchEvent, n)
	for seq := q.first; seq < q.next; seq++ {
		ring[seq&uint64(n-1)] = *q.at(seq)
	}
	q.ring = ring
}

// expire forgets the waiting events older than the horizon before the
// newest event time.
func (q *pairQueue) expire() {
	for q.first < q.next && q.newest-q.at(q.first).t > q.horizon {
		q.drop()
	}
}

// drop forgets the oldest event held: it heads its chain, since chains
// run in arrival order.
func (q *pairQueue) drop() {
	e := q.at(q.first)
	if !e.used {
		q.expired++
	}
	if c, ok := q.chains[e.side][e.key]; ok && c.head == e.seq {
		c.head = e.next
		q.setChain(e.side, e.key, c)
	}
	if e.req != 0 && q.requests[e.side][e.req] == e.seq {
		delete(q.requests[e.side], e.req)
	}
	q.first++
}

// pairedGroup is an open paired λ group: the runs of both sides of the
// pairs of one qid, judged together once it has minRuns pairs.
type pairedGroup struct {
	c, b        lamSum
	pairs       int
	first, last int64 // event times of its earliest and latest run
}

// Matcher matches a candidate arm's observations and judgement pairs with
// a baseline arm's for every analysis comparing the two: each pair is
// counted once in its total, which the analyses' Matched views follow (as
// Cumulatives follow a Shared), less the pairs outside their time.
//
// Not safe for concurrent use; the analyses' lock guards it.
type Matcher struct {
	ks      []int
	minRuns int
	cells   []pairedCell
	events  *pairQueue
	judged  *pairQueue
	groups  map[uint64]*pairedGroup
	tot     *Matches
	views   []*Matched
	// shared counts the views that read tot itself (Matched.shared), and
	// own the others: only those fold the journal.
	shared, own int
	// closed holds the visits closed since the view that folded least
	// recently last did (journal[0] is the closed[base]-th visit ever):
	// a view folds the visits it has not seen from here, so a read costs
	// what came since the last one, not all the visits so far.
	journal []closedVisit
	base    int
	// Every view takes a pair whose events all lie in [lo, hi).
	lo, hi int64
	// Visits still open, by qid key and in the order they opened.
	visits    map[uint64]*openVisit
	opened    []*openVisit
	gap, late int64 // MatchOptions.Gap and Lateness, ns
	newest    int64 // the latest candidate event time paired
	// first is the earliest start of the views: events before it reach
	// no view, and are not offered to be paired.
	first int64
}

// closedVisit is what a closed visit counted: its summary per paired
// series (0: none) and its cited pairs.
type closedVisit struct {
	sums  []VisitSummary
	cited CitedVisit
}

func (c *closedVisit) addTo(m *Matches, sign int64) {
	for i, s := range c.sums {
		if s == 0 {
			continue
		}
		if n := m.Visits[i][s] + sign; n != 0 {
			m.Visits[i][s] = n
		} else {
			delete(m.Visits[i], s)
		}
	}
	if c.cited != "" {
		m.addCited(c.cited, sign)
	}
}

// openVisit is a visit still taking pairs.
type openVisit struct {
	key    uint64
	span   int64 // VisitSpan of its candidate events
	lo, hi int64 // the times of its pairs' events
	pairs  int
	closed bool
	acc    []visitAcc // per paired series
	cited  []uint32   // the pairs' ΔS-cited bins: candidate's << 16 | baseline's
}

// MatchOptions size a Matcher.
type MatchOptions struct {
	Ks      []int
	MinRuns int   // lambda.min_runs
	Horizon int64 // the most event time between two matched events, ns
	// Gap is the span of a visit (visits.go), ns; Lateness how late an
	// event may still come (window.max_lateness): a visit closes once no
	// run can join it.
	Gap, Lateness int64
	// MaxPending bounds the events (and, apart, the judgement pairs)
	// waiting for a partner; past it the oldest are forgotten.
	MaxPending int
	// Uncounted are the paired series whose visits no check reads
	// (UncountedSeries): left empty, they cost an event nothing.
	Uncounted []string
}

// NewMatcher returns a Matcher with nothing matched.
func NewMatcher(opt MatchOptions) *Matcher {
	return &Matcher{
		ks: slices.Clone(opt.Ks), minRuns: min(max(opt.MinRuns, 1), maxGroupRuns), cells: uncount(pairedCells(opt.Ks), opt.Ks, opt.Uncounted),
		events: newPairQueue(opt.Horizon, opt.MaxPending), judged: newPairQueue(opt.Horizon, opt.MaxPending),
		groups: map[uint64]*pairedGroup{}, tot: NewMatches(opt.Ks), lo: math.MinInt64, hi: math.MaxInt64,
		visits: map[uint64]*openVisit{}, gap: max(opt.Gap, 1), late: opt.Lateness, newest: math.MinInt64, first: math.MinInt64,
	}
}

// Expired is how many events and judgement pairs waited in vain: past the
// horizon, or pushed out by MaxPending.
func (mt *Matcher) Expired() int64 { return mt.events.expired + mt.judged.expired }

// keyOf is the qid's key: its QIDKey when numbered, else its hash with the
// top bit set, which no QIDKey has.
func keyOf(qidKey uint32, qid string) uint64 {
	if qidKey != 0 {
		return uint64(qidKey)
	}
	return qidHash(qid) | 1<<63
}

func requestHash(id string) uint64 {
	if id == "" {
		return 0
	}
	return qidHash(id) | 1 // never 0
}

// Offer matches an observation of side (Candidate or Baseline) at event
// time t (Unix ns), or keeps it waiting for its partner.
func (mt *Matcher) Offer(side int, o *Observation, t int64) {
	if t < mt.first {
		return
	}
	e := matchEvent{t: t, key: keyOf(o.QIDKey, o.QID), req: requestHash(o.RequestID), set: o.eventCounters(),
		recall: o.RecallStrict, hit: o.HitAtK, triage: int8(o.Triage), side: uint8(side), lambda: inLambda(o), run: o.Lambda}
	if citedCounted(o) {
		e.cited = 1 + citedBin(o.DeltaSCited)
	}
	p, byRequest := mt.events.offer(&e)
	if p == nil {
		return
	}
	c, b := &e, p
	if side == Baseline {
		c, b = p, &e
	}
	lo, hi := min(c.t, b.t), max(c.t, b.t)
	countBy := func(m *Matches) {
		if byRequest {
			m.ByRequest++
		} else {
			m.ByQID++
		}
	}
	countBy(mt.tot)
	if lo < mt.lo || hi >= mt.hi {
		for _, v := range mt.views {
			if lo < v.start || hi >= v.end {
				countBy(v.excluded())
			}
		}
	}
	mt.visit(c, b)
	if c.lambda && b.lambda {
		mt.groupRun(c, b)
	}
}

// visit adds a pair to the open visit of its qid and span (visits.go: a
// qid's runs within one span of the gap), or opens one; a pair older than
// its qid's open visit is a visit of its own. Visits no run can join any
// more, their span past by the lateness allowed, close.
func (mt *Matcher) visit(c, b *matchEvent) {
	span := VisitSpan(c.t, mt.gap)
	v := mt.visits[c.key]
	if v != nil && (span != v.span || v.pairs >= maxVisitPairs) {
		if span < v.span {
			v = &openVisit{key: c.key, span: span, lo: math.MaxInt64, hi: math.MinInt64, acc: make([]visitAcc, len(mt.cells))}
			v.add(mt.cells, c, b)
			mt.closeVisit(v)
			return
		}
		mt.closeVisit(v)
		v = nil
	}
	if v == nil {
		v = &openVisit{key: c.key, span: span, lo: math.MaxInt64, hi: math.MinInt64, acc: make([]visitAcc, len(mt.cells))}
		mt.visits[c.key] = v
		mt.opened = append(mt.opened, v)
	}
	v.add(mt.cells, c, b)
	mt.newest = max(mt.newest, c.t)
	for len(mt.opened) > 0 {
		o := mt.opened[0]
		if !o.closed && mt.newest < (o.span+1)*mt.gap+mt.late {
			break
		}
		mt.closeVisit(o)
		mt.opened[0] = nil
		mt.opened = mt.opened[1:]
	}
}

// add counts a pair in the visit.
func (v *openVisit) add(cells []pairedCell, c, b *matchEvent) {
	for i := range cells {
		pc := &cells[i]
		if pc.uncounted {
			continue
		}
		cc, cb := pc.cell(c), pc.cell(b)
		a := &v.acc[i]
		if cc != cellOut {
			a[1]++
			if cc == cellHit {
				a[0]++
			}
		}
		if cb != cellOut {
			a[3]++
			if cb == cellHit {
				a[2]++
			}
		}
		if cc != cellOut && cb != cellOut {
			a[4]++
			if cc == cellHit {
				a[5]++
			}
			if cb == cellHit {
				a[6]++
			}
		}
	}
	if c.cited != 0 || b.cited != 0 {
		bin := func(e *matchEvent) uint16 {
			if e.cited == 0 {
				return NoCited
			}
			return e.cited - 1
		}
		v.cited = append(v.cited, uint32(bin(c))<<16|uint32(bin(b)))
	}
	v.pairs++
	v.lo, v.hi = min(v.lo, c.t, b.t), max(v.hi, c.t, b.t)
}

// citedKey is the visit's CitedVisit: its pairs sorted, as a packed pair's
// numeric order is a CitedVisit's byte order.
func (v *openVisit) citedKey() CitedVisit {
	slices.Sort(v.cited)
	var buf [4 * maxVisitPairs]byte
	for i, p := range v.cited {
		binary.BigEndian.PutUint32(buf[4*i:], p)
	}
	return CitedVisit(buf[:4*len(v.cited)])
}

// closeVisit counts a visit's summaries, once.
func (mt *Matcher) closeVisit(v *openVisit) {
	if v.closed {
		return
	}
	v.closed = true
	if mt.visits[v.key] == v {
		delete(mt.visits, v.key)
	}
	c := closedVisit{sums: make([]VisitSummary, len(v.acc))}
	if len(v.cited) > 0 {
		c.cited = v.citedKey()
	}
	for i := range v.acc {
		if v.acc[i][1] != 0 || v.acc[i][3] != 0 {
			c.sums[i] = v.acc[i].summary()
		}
	}
	c.addTo(mt.tot, 1)
	if mt.own > 0 {
		mt.journal = append(mt.journal, c)
	}
	if v.lo < mt.lo || v.hi >= mt.hi {
		for _, w := range mt.views {
			if v.lo < w.start || v.hi >= w.end {
				c.addTo(w.excluded(), 1)
			}
		}
	}
}

// trim forgets the journal's visits every view has folded.
func (mt *Matcher) trim() {
	seen := mt.base + len(mt.journal)
	for _, v := range mt.views {
		if !v.shared {
			seen = min(seen, v.seen)
		}
	}
	if k := seen - mt.base; k > 0 {
		n := copy(mt.journal, mt.journal[k:])
		clear(mt.journal[n:])
		mt.journal = mt.journal[:n]
		mt.base = seen
	}
}

// groupRun adds a pair of λ runs to its qid's paired group, and judges the
// group once it holds minRuns pairs.
func (mt *Matcher) groupRun(c, b *matchEvent) {
	g := mt.groups[c.key]
	if g == nil {
		g = &pairedGroup{first: math.MaxInt64, last: math.MinInt64}
		mt.groups[c.key] = g
	}
	g.c.add(c.run)
	g.b.add(b.run)
	g.pairs++
	g.first, g.last = min(g.first, c.t, b.t), max(g.last, c.t, b.t)
	if g.pairs < mt.minRuns {
		return
	}
	_, cConv, cFlip := g.c.eval(mt.minRuns)
	_, bConv, bFlip := g.b.eval(mt.minRuns)
	cell := func(yes bool) int {
		if yes {
			return cellHit
		}
		return cellMiss
	}
	add := func(m *Matches) {
		m.Lambda[0][cell(cConv)][cell(bConv)]++
		m.Lambda[1][cell(cFlip)][cell(bFlip)]++
	}
	add(mt.tot)
	if g.first < mt.lo || g.last >= mt.hi {
		for _, v := range mt.views {
			if g.first < v.start || g.last >= v.end {
				add(v.excluded())
			}
		}
	}
	delete(mt.groups, c.key)
}

// OfferJudged matches a judgement pair of side at event time t (Unix ns),
// or keeps it waiting.
func (mt *Matcher) OfferJudged(side int, p *PairObservation, t int64) error {
	si, ai := labelIndex(p.Scholar), labelIndex(p.Auditor)
	if si < 0 || ai < 0 {
		return invalidf("judgement labels %q/%q: want one of %v", p.Scholar, p.Auditor, JudgementLabels)
	}
	if t < mt.first {
		return nil
	}
	e := matchEvent{t: t, key: keyOf(0, p.QID), req: requestHash(p.RequestID), triage: int8(si*nLabels + ai), side: uint8(side)}
	q, byRequest := mt.judged.offer(&e)
	if q == nil {
		return nil
	}
	c, b := &e, q
	if side == Baseline {
		c, b = q, &e
	}
	add := func(m *Matches) {
		m.Judged[c.triage][b.triage]++
		if byRequest {
			m.JudgedByRequest++
		} else {
			m.JudgedByQID++
		}
	}
	add(mt.tot)
	lo, hi := min(c.t, b.t), max(c.t, b.t)
	if lo < mt.lo || hi >= mt.hi {
		for _, v := range mt.views {
			if lo < v.start || hi >= v.end {
				add(v.excluded())
			}
		}
	}
	return nil
}

// Matched is one analysis' share of a Matcher: the pairs whose events all
// lie in its time, [start, end). Detached, it is counts of its own.
//
// A view attached before its Matcher counted anything, and from which no
// pair has been left out since, has taken every pair of the total: it
// shares the total rather than folding each closed visit into counts of
// its own, so that analyses of the same arms started together (several
// check sets of one canary) pay for their pairs once. The first pair left
// out of it, a restore, or detaching, gives it its own copy.
type Matched struct {
	mt     *Matcher
	own    *Matches
	shared bool
	// Attached: the total's fixed-size counts when last folded, the
	// journal's visits seen by then, and the pairs of the total not taken
	// since.
	mark, ex   *Matches
	seen       int
	start, end int64
}

// NewMatched returns an analysis' empty share for the cut-offs ks, taking
// pairs in [start, end) once attached.
func NewMatched(ks []int, start, end int64) *Matched {
	own := NewMatches(ks)
	own.logCited = true
	return &Matched{own: own, start: start, end: end}
}

// Restore sets the counts taken so far (from a checkpoint).
func (v *Matched) Restore(m *Matches) {
	v.unshare()
	v.fold()
	v.own = m.clone()
	v.own.logCited = true
}

func (v *Matched) excluded() *Matches {
	v.unshare()
	if v.ex == nil {
		v.ex = NewMatches(v.mt.ks)
	}
	return v.ex
}

// SetEnd ends the view's time at end (Unix ns).
func (v *Matched) SetEnd(end int64) {
	v.fold()
	v.end = end
	if v.mt != nil {
		v.mt.refresh()
	}
}

// AttachTo makes v follow mt (same cut-offs).
func (v *Matched) AttachTo(mt *Matcher) {
	if v.mt == mt {
		return
	}
	v.Detach()
	v.mt = mt
	v.mark, v.ex, v.seen = mt.tot.tables(), nil, mt.base+len(mt.journal)
	mt.views = append(mt.views, v)
	if shareTotals && v.own.empty() && mt.tot.empty() {
		v.shared, v.mark = true, nil
		mt.shared++
		// The shared views' reader follows the total's changes to Cited
		// as an own view's reader follows its own.
		mt.tot.logCited = true
	} else {
		mt.own++
	}
	mt.refresh()
}

// shareTotals lets views share their Matcher's total; off, every view
// folds its own counts, which the tests take for reference.
var shareTotals = true

// Shared is the Matcher whose total v reads when it shares it, else nil.
func (v *Matched) Shared() *Matcher {
	if v.shared {
		return v.mt
	}
	return nil
}

// unshare gives a view that shares its Matcher's total a copy of its own,
// from which pairs can then be left out, and makes it fold from here on.
func (v *Matched) unshare() {
	if !v.shared {
		return
	}
	mt := v.mt
	v.shared = false
	v.own = mt.tot.clone()
	v.own.logCited = true
	v.own.citedChanged()
	v.mark, v.ex, v.seen = mt.tot.tables(), nil, mt.base+len(mt.journal)
	mt.shared--
	mt.own++
	if mt.shared == 0 {
		mt.tot.logCited = false
		mt.tot.citedChanged()
	}
}

// Detach folds in what v gained through its Matcher and leaves it.
func (v *Matched) Detach() {
	if v.mt == nil {
		return
	}
	v.unshare()
	v.fold()
	mt := v.mt
	mt.own--
	mt.views = slices.DeleteFunc(mt.views, func(x *Matched) bool { return x == v })
	mt.refresh()
	mt.trim()
	v.mt, v.mark, v.ex = nil, nil, nil
}

func (mt *Matcher) refresh() {
	mt.lo, mt.hi, mt.first = math.MinInt64, math.MaxInt64, math.MaxInt64
	for _, v := range mt.views {
		mt.lo, mt.hi, mt.first = max(mt.lo, v.start), min(mt.hi, v.end), min(mt.first, v.start)
	}
	if len(mt.views) == 0 {
		mt.first = math.MinInt64
	}
}

// fold brings own up to date: what the total gained since the mark (the
// visits closed since, from the journal), less the pairs not taken.
func (v *Matched) fold() {
	mt := v.mt
	if mt == nil || v.shared {
		return
	}
	for i := v.seen - mt.base; i < len(mt.journal); i++ {
		mt.journal[i].addTo(v.own, 1)
	}
	v.seen = mt.base + len(mt.journal)
	v.own.addTables(mt.tot, 1)
	v.own.addTables(v.mark, -1)
	if v.ex != nil {
		v.own.Add(v.ex, -1)
		v.ex.reset()
	}
	v.mark = mt.tot.tables()
	mt.trim()
}

// Counts are the pairs taken so far (a copy).
func (v *Matched) Counts() *Matches {
	v.fold()
	return v.Read().clone()
}

// Read is the pairs taken so far, not a copy: the caller reads it before
// anything else reaches v, and does not change it.
func (v *Matched) Read() *Matches {
	if v.shared {
		return v.mt.tot
	}
	v.fold()
	return v.own
}

// PairedVisits are the closed visits' summaries of per-event series s (of
// the cut-offs ks), and how many pairs were matched by request and by qid;
// ok is false for a series that is not a per-event proportion.
func (m *Matches) PairedVisits(s Series, ks []int) (visits map[VisitSummary]int64, byRequest, byQID int64, ok bool) {
	if !s.Row.PerEvent() {
		return nil, 0, 0, false
	}
	for i, ps := range PairedSeries(ks) {
		if ps.Name == s.Name {
			return m.Visits[i], m.ByRequest, m.ByQID, true
		}
	}
	return nil, 0, 0, false
}

// Paired is the table of matched pairs that counts series s, and how many
// of its pairs were matched by request and by qid: the paired λ groups'
// (convergent, flipping) or the judgement pairs' (agreeing, Scholar
// abstaining). ok is false for any other series (per-event proportions:
// PairedVisits; κ: Judged).
func (m *Matches) Paired(s Series) (t Table, byRequest, byQID int64, ok bool) {
	r := &s.Row
	switch {
	case !Pairable(s) || r.PerEvent():
		return Table{}, 0, 0, false
	case r.num == cLambdaConvergent:
		return m.Lambda[0], m.ByRequest, m.ByQID, true
	case r.num == cLambdaFlips:
		return m.Lambda[1], m.ByRequest, m.ByQID, true
	case r.num == cPairsAgreeing || r.num == cPairsScholarAbstain:
		for a := range m.Judged {
			for b, n := range m.Judged[a] {
				t[judgedCell(r.num, a)][judgedCell(r.num, b)] += n
			}
		}
		return t, m.JudgedByRequest, m.JudgedByQID, true
	}
	return Table{}, 0, 0, false
}

// QuestionDecided says whether an event counts in s's denominator
// is decided by its question alone (its gold item, and that the event
// carries an answer or a retrieval): then both sides of a pair count in
// it, or neither, unless one of them is a half whose other half never
// came; λ groups and judgement pairs count always. Precision and chr count
// the answers shipped, which the sides of a pair need not share.
func QuestionDecided(s Series) bool {
	switch s.Row.den {
	case CountAnswerable, CountUnanswerable, CountRetrievedAnswerable, CountRecallAtK,
		CountCoverageEligible, CountCitationAccEligible, CountRanked, cLambdaComplete, cPairsJudged:
		return true
	}
	return false
}

// Pairable says whether a table of matched pairs counts s (Paired).
func Pairable(s Series) bool {
	r := &s.Row
	if r.Kind != Proportion {
		return false
	}
	switch r.num {
	case cLambdaConvergent, cLambdaFlips, cPairsAgreeing, cPairsScholarAbstain:
		return true
	}
	return r.PerEvent()
}

// judgedCell is a judgement pair's cell (miss or hit) for the count num,
// the pair's labels l = Scholar·4 + Auditor.
func judgedCell(num Counter, l int) int {
	s, a := l/nLabels, l%nLabels
	hit := s == a
	if num == cPairsScholarAbstain {
		hit = JudgementLabels[s] == vocab.LabelAbstain
	}
	if hit {
		return cellHit
	}
	return cellMiss
}

// EventCells gives, for each of PairedSeries(ks), an observation's cell:
// 0 not counted in the series, 1 counted, 2 counted in its numerator.
type EventCells struct{ cells []pairedCell }

// NewEventCells returns the cells of PairedSeries(ks).
func NewEventCells(ks []int) *EventCells { return &EventCells{cells: pairedCells(ks)} }

// Of writes o's cells into dst (len PairedSeries(ks)).
func (c *EventCells) Of(o *Observation, dst []uint8) {
	e := matchEvent{set: o.eventCounters(), recall: o.RecallStrict, hit: o.HitAtK, triage: int8(o.Triage)}
	for i := range c.cells {
		dst[i] = uint8(c.cells[i].cell(&e))
	}
}

// LambdaBlocks cuts each key's λ runs, in the order they come, into
// groups of minRuns runs, as an analysis does (Cumulative), and judges
// each group once it is complete. Not safe for concurrent use.
type LambdaBlocks struct {
	minRuns int
	open    []lamSum // by key
}

// NewLambdaBlocks returns blocks of minRuns runs (at least 1) for keys
// 0 … keys−1.
func NewLambdaBlocks(minRuns, keys int) *LambdaBlocks {
	return &LambdaBlocks{minRuns: min(max(minRuns, 1), maxGroupRuns), open: make([]lamSum, keys)}
}

// Add adds o's run to key's open group when o is a λ run; complete tells
// whether that completed the group, and convergent and flips judge it.
func (b *LambdaBlocks) Add(key int, o *Observation) (complete, convergent, flips bool) {
	if !inLambda(o) {
		return false, false, false
	}
	g := &b.open[key]
	g.add(o.Lambda)
	if int(g.runs) < b.minRuns {
		return false, false, false
	}
	complete, convergent, flips = g.eval(b.minRuns)
	*g = lamSum{}
	return complete, convergent, flips
}
