package demo

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/internal/cmdutil"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/sidecar/gates"
)

// printer writes the tour's output: plain text, with ANSI colours only on a
// terminal. Write errors are ignored (a closed pipe must not stop the tour;
// the sidecar keeps serving).
type printer struct {
	w      io.Writer
	colour bool
	gates  []config.Gate // colour values on the failing side of these
	// mu keeps each printf one whole write: the sidecar's gate loop prints
	// transitions next to the tour's lines.
	mu sync.Mutex
}

func newPrinter(w io.Writer, gates []config.Gate) *printer {
	return &printer{w: w, colour: cmdutil.IsTerminal(w) && colourAllowed(), gates: gates}
}

func (p *printer) printf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	p.mu.Lock()
	defer p.mu.Unlock()
	io.WriteString(p.w, s)
}

const (
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiGreen  = "\x1b[32m"
	ansiCyan   = "\x1b[36m"
	ansiDim    = "\x1b[2m"
	ansiReset  = "\x1b[0m"
)

func (p *printer) paint(code, s string) string {
	if !p.colour {
		return s
	}
	return code + s + ansiReset
}

func (p *printer) bold(s string) string { return p.paint(ansiBold, s) }

func (p *printer) banner(opt Options, app *sidecar.App, goldPath string, fellBack bool) {
	base := hostURL(app.Addr())
	p.printf("%s: embedded NATS, the sidecar, a canary analysis, and generated traffic for a live and a canary arm.\n\n", p.bold("shadoweval demo"))
	p.printf("  gold      %d generated items in %s (%.0f%% answerable)\n", goldItems, goldPath, answerable*100)
	p.printf("  NATS      %s (embedded), events on %s<arm>\n", app.NATSURL(), subjectPrefix)
	degrade := "once the analysis passes"
	if opt.DegradeAfter > 0 {
		degrade = "after " + opt.DegradeAfter.String()
	}
	p.printf("  traffic   %s events/s per arm, ts on the demo clock; canary quality %.2f → %.2f %s\n",
		formatRate(opt.Rate), liveQuality, degradedQuality, degrade)
	p.printf("            %.0f%% of it awkward on purpose, as real traffic is: qids outside the gold set (counted\n", awkward*100)
	p.printf("            unlabeled), redeliveries (duplicate), field aliases, odd spellings; counted, never scored\n")
	if opt.Speed != 1 {
		p.printf("  clock     the demo clock runs %s× the wall clock until the canary has failed, then in real time;\n", formatRate(opt.Speed))
		p.printf("            the sidecar runs on it, and the times below are on it\n")
	}
	p.printf("  analysis  %q: canary vs live, the shipped canary checks (tolerance 0.02), from the first event\n", analysisID)
	p.printf("  windows   1m (1s buckets) and 5m (10s buckets); λ groups complete at 3 runs\n")
	if fellBack {
		p.printf("  http      %s was busy: listening on %s instead\n", DefaultListen, app.Addr())
	}
	p.printf("\nWhere to look:\n")
	p.printf("  status page  %s/\n", base)
	p.printf("  verdict      %s/api/v1/verdict?arm=canary&analysis=%s\n", base, analysisID)
	p.printf("  analysis     %s/api/v1/analyses/%s\n", base, analysisID)
	p.printf("  window       %s/api/v1/windows?arm=canary&window=1m\n", base)
	p.printf("  metrics      %s/metrics\n", base)
	if opt.Duration > 0 {
		p.printf("\nRunning for %s (Ctrl-C stops earlier); the 1m window of each arm every %s:\n", opt.Duration, opt.Every)
	} else {
		p.printf("\nRunning until Ctrl-C; the 1m window of each arm every %s:\n", opt.Every)
	}
}

func formatRate(r float64) string {
	if r == float64(int64(r)) {
		return fmt.Sprintf("%d", int64(r))
	}
	return fmt.Sprintf("%.2f", r)
}

// Table columns: the values, then their sample counts. Widths count runes.
var (
	valueCols = []struct {
		metric, title string
		width, digits int
	}{
		{"precision", "precision", 9, 3},
		{"chr", "chr", 6, 3},
		{"recall_at_5", "recall@5", 8, 3},
		{"delta_s_median", "ΔS med", 7, 3},
		{"lambda_convergence", "λ conv", 7, 2},
		{"triage_ok", "triage ok", 9, 2},
	}
	countTitles = []string{"scored", "shipped", "λ grp"}
	countWidths = []int{7, 7, 5}
)

// pad right-aligns s in width runes.
func pad(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return strings.Repeat(" ", width-n) + s
	}
	return s
}

// line assembles a table line from its already padded or painted cells.
func line(label, arm string, values, counts []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%6s  %-7s", label, arm)
	for _, v := range values {
		b.WriteString(" " + v)
	}
	b.WriteString(" │")
	for _, c := range counts {
		b.WriteString(" " + c)
	}
	b.WriteString("\n")
	return b.String()
}

func (p *printer) header() {
	values := make([]string, len(valueCols))
	for i, c := range valueCols {
		values[i] = pad(c.title, c.width)
	}
	counts := make([]string, len(countTitles))
	for i, t := range countTitles {
		counts[i] = pad(t, countWidths[i])
	}
	l := line("time", "arm", values, counts)
	p.printf("%s\n", p.paint(ansiDim, strings.TrimSuffix(l, "\n")))
}

func (p *printer) noData(label, arm string) {
	p.printf("%6s  %-7s %s\n", label, arm, "no events in the 1m window yet")
}

// failing reports whether metric name of rep is on the failing side of
// one of the configured gates that judge rep's arm (the compare_to gates
// against live), by the values the table shows: a colour hint, with no
// window, min_samples or interval (gates.PointFails).
func (p *printer) failing(name string, rep, live *sidecar.WindowReport) bool {
	value := func(arm string) (float64, bool) {
		r := rep
		if arm != rep.Arm {
			if live == nil || arm != live.Arm {
				return 0, false
			}
			r = live
		}
		v, _, ok := metricOf(r, name)
		return v, ok
	}
	for i := range p.gates {
		g := &p.gates[i]
		if g.Metric == name && (len(g.Arms) == 0 || slices.Contains(g.Arms, rep.Arm)) && gates.PointFails(g, rep.Arm, value) {
			return true
		}
	}
	return false
}

// row prints one arm's window: values (— when none) and sample counts:
// scored events, shipped answers (precision, chr) and complete λ groups.
func (p *printer) row(label string, rep, live *sidecar.WindowReport) {
	values := make([]string, len(valueCols))
	for i, c := range valueCols {
		s := "—"
		if v, _, ok := metricOf(rep, c.metric); ok {
			s = fmt.Sprintf("%.*f", c.digits, v)
		}
		values[i] = pad(s, c.width)
		if p.colour && p.failing(c.metric, rep, live) {
			values[i] = p.paint(ansiRed, values[i])
		}
	}
	_, shipped, _ := metricOf(rep, "precision")
	_, groups, _ := metricOf(rep, "lambda_convergence")
	counts := []string{fmt.Sprint(rep.Events["scored"]), fmt.Sprint(shipped), fmt.Sprint(groups)}
	for i := range counts {
		counts[i] = pad(counts[i], countWidths[i])
	}
	p.printf("%s", line(label, rep.Arm, values, counts))
}

func (p *printer) degrade(at time.Duration, afterPass bool) {
	why := ""
	if afterPass {
		why = " as the analysis passed"
	}
	msg := fmt.Sprintf("%6s  ▼ canary degrades at %s%s: quality %.2f → %.2f from here on; its 1m window fills with degraded traffic over the next minute",
		formatElapsed(at), at.Round(100*time.Millisecond), why, liveQuality, degradedQuality)
	p.printf("%s\n", p.paint(ansiYellow+ansiBold, msg))
}

func (p *printer) realTime(at time.Duration, speed float64, until string) {
	msg := fmt.Sprintf("%6s  ▶ the story is told: the demo clock slows from %s× to real time; the traffic goes on %s", formatElapsed(at), formatRate(speed), until)
	p.printf("%s\n", p.paint(ansiBold, msg))
}

// compare prints canary − live over the final window.
func (p *printer) compare(canary, live *sidecar.WindowReport, degraded bool) {
	var parts []string
	for _, m := range []struct{ name, label string }{
		{"precision", "precision"}, {"chr", "chr"}, {"recall_at_5", "recall@5"},
		{"delta_s_median", "ΔS median"}, {"lambda_convergence", "λ convergence"}, {"triage_ok", "triage ok"},
	} {
		a, _, ok1 := metricOf(canary, m.name)
		b, _, ok2 := metricOf(live, m.name)
		if ok1 && ok2 {
			parts = append(parts, fmt.Sprintf("%s %+.3f", m.label, a-b))
		}
	}
	if len(parts) == 0 {
		return
	}
	p.printf("canary − live: %s\n", strings.Join(parts, ", "))
	if !degraded {
		p.printf("(the canary had not degraded yet)\n")
	}
}

// transition prints a gate's change of state as one line (one write, so it
// stays whole next to the tour's own lines). Only changes a reader acts on
// are shown: pending, firing and resolved.
func (p *printer) transition(at time.Duration, tr gates.Transition) {
	switch tr.State {
	case gates.Pending, gates.Firing, gates.Resolved:
	default:
		return
	}
	code := ansiRed
	if tr.State == gates.Resolved {
		code = ansiBold
	}
	value := "—"
	if tr.Value != nil {
		value = strconv.FormatFloat(*tr.Value, 'f', 3, 64)
	}
	p.printf("%6s  %s gate %s on %s: %s = %s, wants %s %s (%d samples)\n", formatElapsed(at), p.paint(code, "■ "+tr.State.String()),
		tr.Gate, tr.Arm, cmp.Or(tr.Subject, tr.Metric), value, tr.Op, strconv.FormatFloat(tr.Threshold, 'f', 2, 64), tr.Samples)
}

// analysisStarted prints the analysis as started, in the form of verdict.
func (p *printer) analysisStarted(r analysis.Result) {
	msg := fmt.Sprintf("◆ analysis %s: %s (started: %s − %s, the %s checks; it passes once every check with data does)",
		r.Analysis, r.Verdict, r.Arm, r.Baseline, r.CheckSet)
	p.printf("%6s  %s\n", formatElapsed(0), p.paint(ansiCyan+ansiBold, msg))
}

// verdict prints a change of the analysis' verdict with the check that
// decided it: for a pass the checks that were not passing in prev (the
// last judgement read before), for a fail the failing check and its
// interval, for inconclusive the undecided checks.
func (p *printer) verdict(at time.Duration, r, prev analysis.Result) {
	var msg string
	code := ansiCyan
	switch r.Verdict {
	case analysis.Pass:
		code = ansiGreen
		withData := 0
		var last []string
		for i, c := range r.Checks {
			if c.Verdict == analysis.NoData {
				continue
			}
			withData++
			if i < len(prev.Checks) && prev.Checks[i].Name == c.Name && prev.Checks[i].Verdict != analysis.Pass {
				last = append(last, c.Name)
			}
		}
		msg = fmt.Sprintf("pass (all %d checks with data pass", withData)
		if len(last) > 0 {
			msg += "; last to pass: " + strings.Join(last, ", ")
		}
		msg += ")"
	case analysis.Fail:
		code = ansiRed
		var failing []string
		var first *analysis.CheckResult
		for i := range r.Checks {
			if c := &r.Checks[i]; c.Verdict == analysis.Fail {
				failing = append(failing, c.Name)
				if first == nil {
					first = c
				}
			}
		}
		msg = "fail"
		if first != nil {
			msg += " — " + checkSpan(first)
			if len(failing) > 1 {
				msg += fmt.Sprintf(" (%d checks fail: %s)", len(failing), strings.Join(failing, ", "))
			}
		}
	default:
		msg = string(r.Verdict)
		if u := undecided(r); len(u) > 0 {
			msg += " (undecided: " + strings.Join(u, ", ") + ")"
		}
		if prev.Verdict == analysis.Pass {
			// The running intersection of a check is dropped when its
			// interval now misses it: the arm changed, and the check is
			// judged on the evidence as it is now.
			msg += " — no longer a pass: the canary changed, and a check whose interval moved off its earlier readings is judged afresh"
		}
	}
	p.printf("%6s  %s\n", formatElapsed(at), p.paint(code+ansiBold, "◆ analysis "+r.Analysis+": "+msg))
}

// undecided lists the checks neither passing nor without data.
func undecided(r analysis.Result) []string {
	var u []string
	for _, c := range r.Checks {
		if c.Verdict == analysis.Inconclusive {
			u = append(u, c.Name)
		}
	}
	return u
}

// checkSpan says where a relative check's interval lies against its
// limit: "precision arm − baseline in [−0.210, −0.120], entirely below
// −0.02"; of any other check, its reason.
func checkSpan(c *analysis.CheckResult) string {
	p := c.Presentation()
	switch {
	case c.Interval == nil:
		return c.Name + ": " + c.Reason
	case !p.Relative:
		return c.Name + " " + c.Reason
	}
	tol := math.Abs(p.Limit)
	t := strconv.FormatFloat(tol, 'f', -1, 64)
	where := "entirely above +" + t
	if p.FailsBelow() {
		where = "entirely below −" + t
	}
	if c.Verdict != analysis.Fail {
		where = "against ±" + t
	}
	b := func(v float64) string {
		// a fourth decimal where three would round onto the tolerance
		if math.Abs(math.Abs(v)-tol) < 0.0005 {
			return strings.Replace(strconv.FormatFloat(v, 'f', 4, 64), "-", "−", 1)
		}
		return signed(v)
	}
	return fmt.Sprintf("%s arm − baseline in [%s, %s], %s", c.Name, b(c.Interval[0]), b(c.Interval[1]), where)
}

// signed formats v with three decimals and a real minus sign.
func signed(v float64) string {
	return strings.Replace(strconv.FormatFloat(v, 'f', 3, 64), "-", "−", 1)
}

// signedPlus is signed with a + on positive values.
func signedPlus(v float64) string {
	if v > 0 {
		return "+" + signed(v)
	}
	return signed(v)
}

// analysisLine is the analysis under a report: verdict, checks passing,
// events per arm.
func (p *printer) analysisLine(r analysis.Result) {
	pass, withData := 0, 0
	var failing []string
	for _, c := range r.Checks {
		if c.Verdict == analysis.NoData {
			continue
		}
		withData++
		switch c.Verdict {
		case analysis.Pass:
			pass++
		case analysis.Fail:
			failing = append(failing, c.Name)
		}
	}
	line := fmt.Sprintf("%6s  analysis %s: %s, %d/%d checks pass", "", r.Analysis, r.Verdict, pass, withData)
	switch u := undecided(r); {
	case len(failing) > 0:
		line += fmt.Sprintf(", %d fail (%s)", len(failing), shortList(failing))
	case len(u) > 0:
		line += " (undecided: " + shortList(u) + ")"
	}
	line += fmt.Sprintf("; %d canary, %d live events", r.Events.Arm, r.Events.Baseline)
	p.printf("%s\n", p.paint(ansiDim, line))
}

// shortList joins the first three names and counts the others.
func shortList(names []string) string {
	if len(names) <= 3 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, +%d", strings.Join(names[:3], ", "), len(names)-3)
}

// unscored prints, per arm, the events of its final window that were not
// scored: the awkward share of the traffic, counted on purpose.
func (p *printer) unscored(reps map[string]*sidecar.WindowReport) {
	var parts []string
	for _, arm := range arms {
		rep := reps[arm]
		if rep == nil {
			continue
		}
		var counts []string
		for _, o := range []string{"unlabeled", "duplicate", "late", "rejected", "join_timeout"} {
			if n := rep.Events[o]; n > 0 {
				counts = append(counts, fmt.Sprintf("%d %s", n, o))
			}
		}
		if len(counts) > 0 {
			parts = append(parts, arm+" "+strings.Join(counts, ", "))
		}
	}
	if len(parts) > 0 {
		p.printf("Not scored in the %s window, the awkward %.0f%% of the traffic, counted as in production:\n  %s\n", reportWindow, awkward*100, strings.Join(parts, "; "))
	}
}

// readingNotes explains the numbers of the status page that look alarming
// on a healthy arm and are not.
func (p *printer) readingNotes() {
	p.printf("%s\n", p.paint(ansiDim, `Reading the status page: delta_s_retrieved_* cover every ranked item, the weak tail and the
unanswerable questions included, so a healthy arm's p90 sits in the risk zone; the zones and gates
judge the cited ΔS (delta_s_median, delta_s_p90). triage_refusal_suspect follows seed 004: a
refusal is suspect when the evidence shares any word of 3 or more letters with the question, so
on real text nearly every refusal counts, the right ones too; read it against the live arm.`))
}

// analysisFinal prints every check of the analysis.
func (p *printer) analysisFinal(r analysis.Result) {
	p.printf("Analysis %s (%s − %s, everything since the start): %s\n", r.Analysis, r.Arm, r.Baseline, p.bold(string(r.Verdict)))
	for i := range r.Checks {
		c := &r.Checks[i]
		if c.Verdict == analysis.NoData {
			continue
		}
		est, span := "—", ""
		if c.Estimate != nil {
			est = signedPlus(*c.Estimate)
		}
		if c.Interval != nil {
			span = "[" + signedPlus(c.Interval[0]) + ", " + signedPlus(c.Interval[1]) + "]"
		}
		p.printf("  %-20s %8s  %-18s %6d / %-6d %s\n", c.Name, est, span, c.Samples.Arm, c.Samples.Baseline, c.Verdict)
	}
}
