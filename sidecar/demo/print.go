package demo

import (
	"fmt"
	"github.com/shadoweval/shadoweval/sidecar/gates"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
)

// printer writes the tour's output: plain text, with ANSI colours only on a
// terminal. Write errors are ignored (a closed pipe must not stop the tour;
// the sidecar keeps serving).
type printer struct {
	w      io.Writer
	colour bool
	gates  []config.Gate // colour values on the failing side of these
}

func newPrinter(w io.Writer, gates []config.Gate) *printer {
	return &printer{w: w, colour: isTerminal(w) && colourAllowed(), gates: gates}
}

func (p *printer) printf(format string, args ...any) { fmt.Fprintf(p.w, format, args...) }

const (
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
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
	p.printf("%s: embedded NATS, the sidecar, and generated traffic for a live and a canary arm.\n\n", p.bold("shadoweval demo"))
	p.printf("  gold      %d generated items in %s\n", goldItems, goldPath)
	p.printf("  NATS      %s (embedded), events on %s<arm>\n", app.NATSURL(), subjectPrefix)
	p.printf("  traffic   %s events/s per arm, each with the current ts; canary quality %.2f → %.2f after %s\n",
		formatRate(opt.Rate), liveQuality, degradedQuality, opt.DegradeAfter)
	p.printf("  windows   1m (5s buckets) and 5m (10s buckets); λ groups complete at 3 runs\n")
	if fellBack {
		p.printf("  http      %s was busy: listening on %s instead\n", DefaultListen, app.Addr())
	}
	p.printf("\nWhere to look:\n")
	p.printf("  status page  %s/\n", base)
	p.printf("  metrics      %s/metrics\n", base)
	p.printf("  window       %s/api/v1/windows?arm=canary&window=1m\n", base)
	p.printf("  verdict      %s/api/v1/verdict?arm=canary&window=1m   (once gates are evaluated)\n", base)
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
	}
	countTitles = []string{"scored", "shipped", "answ.", "λ grp"}
	countWidths = []int{7, 7, 6, 5}
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
// the threshold of one of the configured gates that judge rep's arm (the
// compare_to gates against live). It is a colour hint: the window and
// min_samples of the gate are not looked at.
func (p *printer) failing(name string, rep, live *sidecar.WindowReport) bool {
	v, _, ok := metricOf(rep, name)
	if !ok {
		return false
	}
	for _, g := range p.gates {
		if g.Metric != name || (len(g.Arms) > 0 && !slices.Contains(g.Arms, rep.Arm)) {
			continue
		}
		x := v
		if g.CompareTo != "" {
			if live == nil || g.CompareTo != live.Arm || rep.Arm == live.Arm {
				continue
			}
			l, _, ok := metricOf(live, name)
			if !ok {
				continue
			}
			x = v - l
		}
		var pass bool
		switch g.Op {
		case ">=":
			pass = x >= g.Threshold
		case ">":
			pass = x > g.Threshold
		case "<=":
			pass = x <= g.Threshold
		case "<":
			pass = x < g.Threshold
		default:
			pass = true
		}
		if !pass {
			return true
		}
	}
	return false
}

// row prints one arm's window: values (— when none) and sample counts:
// scored events, shipped answers (precision, chr), answerable runs
// (recall@5) and complete λ groups.
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
	_, answ, _ := metricOf(rep, "recall_at_5")
	_, groups, _ := metricOf(rep, "lambda_convergence")
	counts := []string{fmt.Sprint(rep.Events["scored"]), fmt.Sprint(shipped), fmt.Sprint(answ), fmt.Sprint(groups)}
	for i := range counts {
		counts[i] = pad(counts[i], countWidths[i])
	}
	p.printf("%s", line(label, rep.Arm, values, counts))
}

func (p *printer) degrade(at time.Duration) {
	msg := fmt.Sprintf("%6s  ▼ canary degrades at %s: quality %.2f → %.2f from here on; its 1m window fills with degraded traffic over the next minute",
		formatElapsed(at), at, liveQuality, degradedQuality)
	p.printf("%s\n", p.paint(ansiYellow+ansiBold, msg))
}

// compare prints canary − live over the final window.
func (p *printer) compare(canary, live *sidecar.WindowReport, degraded bool, after time.Duration) {
	var parts []string
	for _, m := range []struct{ name, label string }{
		{"precision", "precision"}, {"chr", "chr"}, {"recall_at_5", "recall@5"},
		{"delta_s_median", "ΔS median"}, {"lambda_convergence", "λ convergence"},
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
		p.printf("(the canary had not degraded yet: it degrades after %s)\n", after)
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
	metric := tr.Metric
	if tr.CompareTo != "" {
		metric += " vs " + tr.CompareTo
	}
	p.printf("%5s  %s gate %s on %s: %s = %s, wants %s %s (%d samples)\n", formatElapsed(at), p.paint(code, "■ "+tr.State.String()),
		tr.Gate, tr.Arm, metric, value, tr.Op, strconv.FormatFloat(tr.Threshold, 'f', 2, 64), tr.Samples)
}
