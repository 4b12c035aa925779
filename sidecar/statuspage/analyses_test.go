package statuspage

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/testenv"
)

// knownAnalyses are hand-made states whose drawings are worked out below:
// a failing comparison (precision), a passing lower-is-better one
// (delta_s_median), an early interval wider than the axis (recall_at_5), an
// absolute check (coverage ≥ 0.7) and a check without data (kappa); then
// an ended analysis, listed first to see the page put it last.
func knownAnalyses() fakeAnalyses {
	since := t0.Add(-10 * time.Minute)
	ended := t0.Add(-time.Hour)
	th := 0.7
	running := analysis.Result{
		Verdict: analysis.Fail, Analysis: "k1", Arm: "canary", Baseline: "live", CheckSet: "canary",
		Since: since, Alpha: 0.01, Events: analysis.Samples{Arm: 1000, Baseline: 990}, Reason: "failing: precision",
		Checks: []analysis.CheckResult{
			{Name: "precision", Metric: "precision", Kind: analysis.KindComparison, Tolerance: 0.02,
				Estimate: ptr(-0.05), Interval: &[2]float64{-0.08, -0.03}, ArmValue: ptr(0.8), BaselineValue: ptr(0.85),
				Samples: analysis.Samples{Arm: 900, Baseline: 880}, MinSamples: 100, Level: 0.9975, Verdict: analysis.Fail,
				Pairing: analysis.PairedByQID, Pairs: 712,
				Reason: "arm − baseline in [-0.0800, -0.0300], entirely below −0.0200"},
			{Name: "delta_s_median", Metric: "delta_s_median", Kind: analysis.KindComparison, Tolerance: 0.02, LowerIsBetter: true,
				Estimate: ptr(0.01), Interval: &[2]float64{-0.005, 0.015}, ArmValue: ptr(0.31), BaselineValue: ptr(0.3),
				Samples: analysis.Samples{Arm: 700, Baseline: 690}, MinSamples: 100, Level: 0.9975, Verdict: analysis.Pass},
			{Name: "recall_at_5", Metric: "recall_at_5", Kind: analysis.KindComparison, Tolerance: 0.02,
				Estimate: ptr(0.1), Interval: &[2]float64{-0.7, 0.9}, ArmValue: ptr(0.9), BaselineValue: ptr(0.8),
				Samples: analysis.Samples{Arm: 12, Baseline: 10}, MinSamples: 100, Level: 0.9975, Verdict: analysis.Inconclusive,
				Reason: "samples 12 (arm) and 10 (baseline), need 100 each"},
			{Name: "coverage_floor", Metric: "coverage", Kind: analysis.KindAbsolute, Op: ">=", Threshold: &th,
				Estimate: ptr(0.8), Interval: &[2]float64{0.75, 0.85}, ArmValue: ptr(0.8), BaselineValue: ptr(0.82),
				Samples: analysis.Samples{Arm: 900, Baseline: 880}, MinSamples: 100, Level: 0.9975, Verdict: analysis.Pass},
			{Name: "kappa", Metric: "kappa", Kind: analysis.KindComparison, Tolerance: 0.02, Level: 0.9975,
				Verdict: analysis.NoData, Reason: "no sample of kappa in either arm"},
		},
	}
	hist := []analysis.Point{
		{At: t0.Add(-10 * time.Minute), Verdict: analysis.Inconclusive, Checks: []analysis.CheckPoint{
			{Estimate: -0.04, Lo: -0.2, Hi: 0.12, Valid: true, Verdict: analysis.Inconclusive}, {}, {}, {}, {}}},
		{At: t0.Add(-5 * time.Minute), Verdict: analysis.Inconclusive, Checks: []analysis.CheckPoint{
			{Estimate: -0.06, Lo: -0.09, Hi: 0, Valid: true, Verdict: analysis.Inconclusive}, {}, {}, {}, {}}},
	}
	old := analysis.Result{
		Verdict: analysis.Pass, Analysis: "k0", Arm: "canary", Baseline: "live", CheckSet: "canary",
		Since: ended.Add(-3 * time.Hour), Ended: &ended, EndReason: "max_duration", Alpha: 0.01,
		Checks: []analysis.CheckResult{{Name: "chr", Metric: "chr", Kind: analysis.KindComparison, Tolerance: 0.02,
			Estimate: ptr(0), Interval: &[2]float64{-0.01, 0.01}, Level: 0.99, Verdict: analysis.Pass}},
	}
	return fakeAnalyses{{Result: old}, {Result: running, History: hist}}
}

func nan() float64 { return math.NaN() }

// checkRow is the first row of check name in the analyses of body.
func checkRow(body, name string) string {
	loc := regexp.MustCompile(`<tr class="check check-[a-z_]+"><th scope="row"[^>]*>` + regexp.QuoteMeta(name) + `[<]`).FindStringIndex(body)
	if loc == nil {
		return ""
	}
	return body[loc[0] : loc[0]+strings.Index(body[loc[0]:], "</tr>")]
}

func TestAnalysesLeadThePage(t *testing.T) {
	src := newFakeSource()
	h := Handler(src, newFakeGates(), nil, func() time.Time { return t0 }, WithAnalyses(knownAnalyses()))
	code, _, body := get(t, h, "/")
	if code != 200 {
		t.Fatalf("GET / = %d", code)
	}
	main := testenv.Between(body, `<main id="live">`, "</main>")
	running := strings.Index(main, `<section class="analysis verdict-fail" aria-labelledby="analysis-0">`)
	ended := strings.Index(main, `<details class="analysis verdict-pass" id="analysis-ended-k0">`)
	arms := strings.Index(main, `<h2 id="arm-0">live`)
	if running < 0 || ended < 0 || arms < 0 || !(running < ended && ended < arms) {
		t.Fatalf("running analysis at %d, ended one at %d, arms at %d: want them in that order\n%.2000s", running, ended, arms, main)
	}
	if first := regexp.MustCompile(`<(section|details)\b`).FindStringIndex(main); first[0] != running {
		t.Errorf("the page does not lead with the running analysis")
	}
	for _, s := range []string{
		`<h2 id="analysis-0"><span class="badge badge-fail">fail</span> Analysis <span class="an-id">k1</span>: canary vs live</h2>`,
		`<p class="verdict-reason">failing: precision</p>`,
		`since <time datetime="2026-03-01T11:50:00Z">2026-03-01 11:50:00 UTC</time> (10m ago) · events: canary <strong>1000</strong>, live <strong>990</strong>`,
		`intervals 99.75 % each side, anytime-valid (α 0.01, 4 checks)`,
		`<th scope="col">Interval over time, 10m</th>`,
		`<th scope="col" class="num">Estimate</th>`, // an absolute check among them
		// the ended one, collapsed, with why it ended
		`<summary><h2 id="analysis-1"><span class="badge badge-pass">pass</span> Analysis <span class="an-id">k0</span>: canary vs live <span class="summary">ended 2026-03-01 11:00:00 UTC after 3h (max_duration)</span></h2></summary>`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks %q", s)
		}
	}

	// precision fails: numbers, reason only as a tooltip (the numbers say it)
	r := checkRow(body, "precision")
	for _, s := range []string{
		`<tr class="check check-fail"><th scope="row" title="arm − baseline in [-0.0800, -0.0300], entirely below −0.0200">precision</th>`,
		`<span class="badge badge-fail">fail</span>`,
		`<strong>−0.05</strong><span class="meta">[−0.08, −0.03]</span><span class="meta">fails below −0.02</span><span class="meta paired">paired by qid · 712 pairs</span>`,
		`aria-label="precision, canary − live: estimate −0.05, interval [−0.08, −0.03]; fails below −0.02; fail"`,
		`<span class="arm-values"><span>canary 0.8 · n 900</span><span>live 0.85 · n 880</span></span>`,
	} {
		if !strings.Contains(r, s) {
			t.Errorf("precision row lacks %q:\n%s", s, r)
		}
	}
	// an inconclusive check shows why; no data is greyed and drawn as such
	if r := checkRow(body, "recall_at_5"); !strings.Contains(r, `<span class="reason">samples 12 (arm) and 10 (baseline), need 100 each</span>`) {
		t.Errorf("recall_at_5 row:\n%s", r)
	}
	r = checkRow(body, "kappa")
	if !strings.HasPrefix(r, `<tr class="check check-no_data">`) || !strings.Contains(r, `<span class="badge badge-no_data">no data</span>`) ||
		strings.Count(r, `text-anchor="middle">no data</text>`) != 3 {
		t.Errorf("kappa row:\n%s", r)
	}
	// an unpaired one says nothing of pairs
	if r := checkRow(body, "delta_s_median"); strings.Contains(r, "paired") {
		t.Errorf("delta_s_median row shows pairs:\n%s", r)
	}
	if r := checkRow(body, "coverage_floor"); !strings.Contains(r, `<span class="meta">coverage</span>`) || !strings.Contains(r, `needs ≥ 0.7`) {
		t.Errorf("coverage_floor row:\n%s", r)
	}

	if strings.Contains(body, ` style="`) {
		t.Error("a style attribute: the CSP blocks it")
	}
	// the fragment carries them too (the script swaps it in)
	_, _, frag := get(t, h, "/fragment")
	if !strings.Contains(frag, `aria-labelledby="analysis-0"`) || strings.Index(frag, "analysis-0") > strings.Index(frag, "arm-0") {
		t.Error("the fragment lacks the analyses, or not first")
	}
}

// TestAnalysisChartsGeometry: the drawings of the known checks, worked out
// by hand, so a wrong drawing fails.
func TestAnalysisChartsGeometry(t *testing.T) {
	h := Handler(newFakeSource(), nil, nil, func() time.Time { return t0 }, WithAnalyses(knownAnalyses()))
	_, _, body := get(t, h, "/")
	want := map[string][]string{
		// d ∈ [−0.08, −0.03], t 0.02, higher is better: axis ±0.1 on
		// x 6…214 (1040 px a unit, 0 at 110); fails left of −0.02 (89.2)
		"precision": {
			`<rect class="failzone" x="6" y="2" width="83.2" height="22"/>`,
			`<line class="zero" x1="110" x2="110" y1="2" y2="24"/>`,
			`<line class="limit" x1="89.2" x2="89.2" y1="2" y2="24"/>`,
			`<text x="6" y="35" text-anchor="start">−0.1</text><text x="110" y="35" text-anchor="middle">0</text><text x="214" y="35" text-anchor="end">&#43;0.1</text>`,
			`<rect class="bar bar-fail" x="26.8" y="9" width="52" height="8" rx="2"/>`,
			`<circle class="est" cx="58" cy="13" r="3.5"/>`,
			// over time: the same ±0.1 upright on y 50…4 (230 px a unit),
			// x 40…214 over 10 min; the first interval runs off the plot
			`<rect class="failzone" x="40" y="31.6" width="174" height="18.4"/>`,
			`<line class="zero" x1="40" x2="214" y1="27" y2="27"/>`,
			`<polygon class="band" points="40,-0.6 127,27 214,33.9 214,45.4 127,47.7 40,73"/>`,
			`<line class="limit" x1="40" x2="214" y1="31.6" y2="31.6"/>`,
			`<path class="estline" d="M40 36.2 L127 40.8 L214 38.5"/>`,
			`<circle class="est" cx="214" cy="38.5" r="3"/>`,
			`<text x="36" y="34.6" text-anchor="end">−0.02</text><text x="36" y="8" text-anchor="end">&#43;0.1</text><text x="36" y="53" text-anchor="end">−0.1</text>`,
			// both arms on 0.75…0.9 (x 8…142)
			`<circle class="base" cx="97.3" cy="14" r="6.5"/><circle class="cand" cx="52.7" cy="14" r="4"/>`,
			`<text x="8" y="35" text-anchor="start">0.75</text>`, `<text x="142" y="35" text-anchor="end">0.9</text>`,
		},
		// lower is better: fails right of +0.02; axis ±0.05 (2080 px a unit)
		"delta_s_median": {
			`<rect class="failzone" x="151.6" y="2" width="62.4" height="22"/>`,
			`<rect class="bar bar-pass" x="99.6" y="9" width="41.6" height="8" rx="2"/>`,
			`<circle class="est" cx="130.8" cy="13" r="3.5"/>`,
			// no history: one bar at the right edge, now; ±0.05 upright is
			// 460 px a unit
			`<rect class="band" x="212.5" y="20.1" width="3" height="9.2"/>`,
			`<line class="limit" x1="40" x2="214" y1="17.8" y2="17.8"/>`,
			`<rect class="failzone" x="40" y="4" width="174" height="13.8"/>`,
			`aria-label="delta_s_median: interval [−0.005, &#43;0.015], estimate &#43;0.01; fails above &#43;0.02"`,
		},
		// [−0.7, 0.9] is wider than ±20 tolerances: clipped to ±0.5, arrows
		"recall_at_5": {
			`<text x="6" y="35" text-anchor="start">−0.5</text>`,
			`<rect class="bar bar-inconclusive" x="6" y="9" width="208" height="8" rx="2"/>`,
			`<polygon class="bar bar-inconclusive" points="2,13 9,7 9,19"/><polygon class="bar bar-inconclusive" points="218,13 211,7 211,19"/>`,
			`<circle class="est" cx="130.8" cy="13" r="3.5"/>`,
		},
		// coverage ≥ 0.7 with [0.75, 0.85]: axis 0.65…0.9 (832 px a unit)
		"coverage_floor": {
			`<rect class="failzone" x="6" y="2" width="41.6" height="22"/>`,
			`<line class="limit" x1="47.6" x2="47.6" y1="2" y2="24"/>`,
			`<text x="6" y="35" text-anchor="start">0.65</text><text x="214" y="35" text-anchor="end">0.9</text><text x="47.6" y="35" text-anchor="middle">0.7</text>`,
			`<rect class="bar bar-pass" x="89.2" y="9" width="83.2" height="8" rx="2"/>`,
			`<circle class="est" cx="130.8" cy="13" r="3.5"/>`,
			// the threshold on the arms' axis too
			`<line class="limit" x1="`,
		},
	}
	for name, parts := range want {
		r := checkRow(body, name)
		if r == "" {
			t.Errorf("no row for %s", name)
			continue
		}
		for _, s := range parts {
			if !strings.Contains(r, s) {
				t.Errorf("%s row lacks\n  %s\nrow:\n%s", name, s, r)
			}
		}
	}
	if r := checkRow(body, "precision"); strings.Contains(r, "failzone\" x=\"151.6") {
		t.Error("precision shaded on the wrong side")
	}
}

// TestBandChartRuns: gaps split the band, a lone judgement is a bar, and
// the axis does not follow early wide intervals.
func TestBandChartRuns(t *testing.T) {
	c := analysis.CheckResult{Name: "chr", Metric: "chr", Kind: analysis.KindComparison, Tolerance: 0.02,
		Estimate: ptr(0.01), Interval: &[2]float64{-0.01, 0.03}, Verdict: analysis.Pass}
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	ch := layoutBand(c, []bandPoint{
		{T: at(0), Est: 0, Lo: -1, Hi: 1, Valid: true}, {T: at(1), Est: 0, Lo: -0.5, Hi: 0.5, Valid: true},
		{T: at(2)},
		{T: at(3), Est: 0.01, Lo: -0.02, Hi: 0.04, Valid: true},
		{T: at(4)},
		{T: at(5), Est: 0.01, Lo: -0.01, Hi: 0.03, Valid: true}, {T: at(6), Est: 0.01, Lo: -0.01, Hi: 0.03, Valid: true},
	})
	if len(ch.Bands) != 2 || len(ch.Bars) != 1 || strings.Count(ch.Path, "M") != 3 {
		t.Fatalf("bands %q bars %v path %q: want 2 bands, 1 bar, 3 runs of the line", ch.Bands, ch.Bars, ch.Path)
	}
	// the axis is the interval now's: ±0.05, not ±1
	if ch.Labels[1].Label != "+0.05" || ch.Labels[2].Label != "−0.05" {
		t.Errorf("labels %+v", ch.Labels)
	}
	// the lone judgement at 3 of 6 minutes
	if x := ch.Bars[0].X + ch.Bars[0].W/2; x != round1(bandLeft+(bandRight-bandLeft)/2) {
		t.Errorf("bar at x %v", x)
	}
	if !strings.Contains(ch.Title, "over 6m (5 judgements), from [−1, +1] to [−0.01, +0.03], estimate +0.01; fails below −0.02") {
		t.Errorf("title %q", ch.Title)
	}
	if e := layoutBand(analysis.CheckResult{Name: "kappa", Verdict: analysis.NoData}, []bandPoint{{T: at(0)}}); !e.Empty || e.EmptyText != "no data" {
		t.Errorf("no data: %+v", e)
	}
}

func TestAnalysesEdges(t *testing.T) {
	// no source: no section; an empty one says so
	_, _, body := get(t, Handler(newFakeSource(), nil, nil, nil), "/")
	if strings.Contains(body, `class="analyses"`) || strings.Contains(body, "No canary analysis") {
		t.Error("analyses shown without a source")
	}
	_, _, body = get(t, Handler(newFakeSource(), nil, nil, nil, WithAnalyses(fakeAnalyses{})), "/")
	if !strings.Contains(body, `<p class="none-running">No canary analysis is running.</p>`) {
		t.Error("no note when no analysis runs")
	}
	// hostile names are escaped; NaNs draw nothing
	nan := analysis.Result{Verdict: analysis.Inconclusive, Analysis: `<script>x</script>`, Arm: `a"b`, Baseline: "live", Since: t0,
		Checks: []analysis.CheckResult{{Name: "<b>", Metric: "precision", Kind: analysis.KindComparison, Tolerance: 0.02,
			Estimate: ptr(nan()), Interval: &[2]float64{nan(), 1}, Verdict: analysis.Inconclusive}}}
	code, _, body := get(t, Handler(newFakeSource(), nil, nil, func() time.Time { return t0 }, WithAnalyses(fakeAnalyses{{Result: nan}})), "/")
	if code != 200 || strings.Contains(body, "<script>x") || strings.Contains(body, "<b>") || strings.Contains(body, "NaN") {
		t.Errorf("%d: hostile names or NaN in the page", code)
	}
	if !strings.Contains(body, "no interval yet") {
		t.Error("a NaN interval is not shown as none")
	}
}

// TestAnalysisListOfManager renders real analyses through AnalysisList.
func TestAnalysisListOfManager(t *testing.T) {
	m, now := simulatedAnalyses(t0)
	h := Handler(newFakeSource(), nil, nil, func() time.Time { return now }, WithAnalyses(AnalysisList(m.List)))
	_, _, body := get(t, h, "/")
	var order []string
	for _, mm := range regexp.MustCompile(`<span class="an-id">([^<]+)</span>`).FindAllStringSubmatch(body, -1) {
		order = append(order, mm[1])
	}
	if strings.Join(order, ",") != "c1,shadow-1,c0" {
		t.Errorf("analyses in order %v, want running c1, shadow-1, then ended c0", order)
	}
	for _, s := range []string{`<section class="analysis verdict-fail" aria-labelledby="analysis-0">`, `<details class="analysis verdict-`, `<polygon class="band" points="`} {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	// every check of c1 has its row
	c1 := testenv.Between(body, `aria-labelledby="analysis-0"`, "</section>")
	if n := strings.Count(c1, `<tr class="check `); n != 12 {
		t.Errorf("c1 has %d check rows, want the 12 of the canary set", n)
	}
}
