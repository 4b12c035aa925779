package eval

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shadoweval/shadoweval/sidecar/analysis"
)

// maxTableQIDs bounds the bad qids the table lists; the JSON has them all.
const maxTableQIDs = 10

// Table renders the report as Markdown, readable in a terminal and as a
// pull-request comment: one row per metric with a value, the overall
// column and one per content type (each followed by its delta with a
// baseline), then the canary analysis, a row per check, and the bad qids.
func (r *Report) Table() []byte {
	var b bytes.Buffer
	b.WriteString("### shadoweval eval\n\n")
	fmt.Fprintf(&b, "- candidate %s: %s\n", code(r.Candidate.File), eventsLine(&r.Candidate))
	if r.Baseline != nil {
		fmt.Fprintf(&b, "- baseline %s: %s\n", code(r.Baseline.File), eventsLine(r.Baseline))
	}
	fmt.Fprintf(&b, "- gold %s: %d qids; ΔS quantiles %s\n\n", code(r.Gold), r.GoldItems, r.Quantiles)

	// Columns: overall, then every content type either file has.
	var types []string
	for _, f := range r.files() {
		for _, s := range f.Types {
			if !slices.Contains(types, s.Type) {
				types = append(types, s.Type)
			}
		}
	}
	slices.Sort(types)
	cols := append([]string{""}, types...)
	section := func(f *FileReport, typ string) *Section {
		if f == nil {
			return nil
		}
		if typ == "" {
			return &f.Overall
		}
		s, _ := f.TypeSection(typ)
		return s
	}
	head := []string{"metric", "all"}
	if r.Baseline != nil {
		head = append(head, "Δ")
	}
	for _, t := range types {
		head = append(head, escape(t))
		if r.Baseline != nil {
			head = append(head, "Δ")
		}
	}
	head = append(head, "n")
	row(&b, head)
	align := []string{"---"}
	for range head[1:] {
		align = append(align, "---:")
	}
	row(&b, align)
	var empty []string
	for _, m := range r.Candidate.Overall.Metrics {
		cells := []string{m.Name}
		if a := compactAlias(m.Name, r.Ks); a != "" {
			cells[0] += " (" + a + ")"
		}
		has := false
		for _, typ := range cols {
			c := lookup(section(&r.Candidate, typ), m.Name)
			has = has || c.Valid
			cells = append(cells, number(c))
			if r.Baseline != nil {
				bm := lookup(section(r.Baseline, typ), m.Name)
				has = has || bm.Valid
				cells = append(cells, deltaCell(c, bm))
			}
		}
		if !has {
			empty = append(empty, m.Name)
			continue
		}
		cells = append(cells, strconv.FormatInt(m.Samples, 10))
		row(&b, cells)
	}
	b.WriteString("\n")
	if len(empty) > 0 {
		fmt.Fprintf(&b, "No data: %s.\n\n", strings.Join(empty, ", "))
	}

	if a := r.Analysis; a != nil {
		fmt.Fprintf(&b, "**Canary analysis: %s**", a.Verdict)
		if a.Reason != "" {
			fmt.Fprintf(&b, " (%s)", a.Reason)
		}
		fmt.Fprintf(&b, ". Check set %s, α = %s, events %d (candidate) / %d (baseline); compared question by question over the %d questions both files answered (%d in the candidate only, %d in the baseline only).\n\n",
			code(a.CheckSet), strconv.FormatFloat(a.Alpha, 'g', -1, 64), a.Events.Arm, a.Events.Baseline,
			a.Questions.Paired, a.Questions.CandidateOnly, a.Questions.BaselineOnly)
		row(&b, []string{"check", "estimate", "interval", "limit", "samples", "paired questions", "verdict", "note"})
		row(&b, []string{"---", "---:", "---", "---", "---:", "---:", "---", "---"})
		for _, c := range a.Checks {
			p := c.Presentation()
			est, iv := "—", "—"
			if c.Estimate != nil {
				est = signed(*c.Estimate)
				if !p.Relative {
					est = strconv.FormatFloat(*c.Estimate, 'f', 4, 64)
				}
			}
			if c.Interval != nil {
				iv = "[" + signed(c.Interval[0]) + ", " + signed(c.Interval[1]) + "]"
			}
			limit := escape(p.Op) + " " + strconv.FormatFloat(p.Limit, 'f', -1, 64)
			if p.Relative {
				limit = "Δ " + strings.NewReplacer(">=", "≥", "<=", "≤").Replace(p.Op) + " " + plusMinus(p.Limit)
			}
			note := ""
			if c.Interval == nil || c.Verdict == analysis.Inconclusive && !strings.Contains(c.Reason, "straddles") {
				note = escape(c.Reason)
			}
			row(&b, []string{c.Name, est, iv, limit, fmt.Sprintf("%d / %d", c.Samples.Arm, c.Samples.Baseline), strconv.FormatInt(c.Pairs, 10), string(c.Verdict), note})
		}
		b.WriteString("\n")
	}

	if r.Baseline != nil && r.PerQuestion != nil {
		regressionsTable(&b, r.Regressions(maxTableQIDs))
	}

	for _, f := range r.files() {
		bad := f.Overall.BadQIDs
		what := "Bad qids"
		if r.Baseline != nil {
			what += " of " + code(f.File)
		}
		fmt.Fprintf(&b, "%s (coverage 0 or cited ΔS > %.2f): %d of %d", what, BadDeltaS, len(bad), f.QIDs)
		if len(bad) > 0 {
			shown := bad[:min(len(bad), maxTableQIDs)]
			quoted := make([]string, len(shown))
			for i, q := range shown {
				quoted[i] = code(q)
			}
			fmt.Fprintf(&b, ": %s", strings.Join(quoted, ", "))
			if len(bad) > len(shown) {
				fmt.Fprintf(&b, " and %d more", len(bad)-len(shown))
			}
		}
		b.WriteString(".\n")
	}
	return b.Bytes()
}

func (r *Report) files() []*FileReport {
	if r.Baseline == nil {
		return []*FileReport{&r.Candidate}
	}
	return []*FileReport{&r.Candidate, r.Baseline}
}

func eventsLine(f *FileReport) string {
	return fmt.Sprintf("%d events, %d scored, %d unlabeled, %d duplicate; %d qids", f.Events.Lines, f.Events.Scored, f.Events.Unlabeled, f.Events.Duplicate, f.QIDs)
}

func lookup(s *Section, name string) Metric {
	if s == nil {
		return Metric{}
	}
	m, _ := s.Metric(name)
	return m
}

func number(m Metric) string {
	if !m.Valid {
		return "—"
	}
	return strconv.FormatFloat(m.Value, 'f', 4, 64)
}

func signed(v float64) string {
	s := strconv.FormatFloat(v, 'f', 4, 64)
	if s == "-0.0000" {
		s = "0.0000"
	}
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

func deltaCell(c, b Metric) string {
	if !c.Valid || !b.Valid {
		return "—"
	}
	return signed(c.Value - b.Value)
}

func row(b *bytes.Buffer, cells []string) {
	b.WriteString("| ")
	b.WriteString(strings.Join(cells, " | "))
	b.WriteString(" |\n")
}

// code quotes a name for Markdown.
func code(s string) string { return "`" + strings.ReplaceAll(s, "`", "'") + "`" }

// escape keeps a cell's text from ending the cell.
func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// plusMinus writes v the shortest way, with its sign: "+0.02", "-0.02".
func plusMinus(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if v >= 0 {
		return "+" + s
	}
	return s
}

// regressionsTable lists the questions whose ranking dropped the most:
// each one's largest drop, and its nDCG and reciprocal rank in both files.
func regressionsTable(b *bytes.Buffer, ls []QuestionLine) {
	if len(ls) == 0 {
		b.WriteString("Largest ranking regressions by question: none.\n\n")
		return
	}
	fmt.Fprintf(b, "Largest ranking regressions by question (the %d largest drops of a ranking metric, `--per-question` lists every question):\n\n", len(ls))
	row(b, []string{"qid", "largest drop", "metric", "runs"})
	row(b, []string{"---", "---:", "---", "---:"})
	for _, l := range ls {
		row(b, []string{code(l.QID), signed(l.Change), l.Worst, strconv.FormatInt(l.Runs, 10)})
	}
	b.WriteString("\n")
}
