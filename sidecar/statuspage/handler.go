package statuspage

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shadoweval/shadoweval/sidecar/gates"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
)

// Source is what the page reads: the arms and windows, and one window
// report (every metric with its sample count, and the event counts by
// outcome) of an arm. ok=false: no data for that arm and window.
type Source interface {
	Arms() []string
	Windows() []string
	Report(arm, window string) (metrics map[string]Value, events map[string]int64, ok bool)
}

// GateSource gives the gate engine's results of an arm, every window. The
// page shows each gate's state, value (arm − CompareTo with CompareTo),
// threshold, samples and, when set, its reason.
type GateSource interface {
	GateStates(arm string) []gates.Result
}

// RefreshInterval is how often the page fetches /fragment; NoScriptRefresh
// how often it reloads itself without JavaScript.
const (
	RefreshInterval = 5 * time.Second
	NoScriptRefresh = 15 * time.Second
)

// eventOutcomes are the event counts shown, in order (SPEC §6).
var eventOutcomes = vocab.Outcomes

// armOrder puts the well-known arms first, the others after them by name.
var armOrder = []string{"live", "shadow", "canary"}

// Handler serves the status page: `GET /` (the whole page) and
// `GET /fragment` (its dynamic part, what the page's script fetches), both
// for the window of the query's `window` (default: the first of
// src.Windows()). gates may be nil (no gate engine); hist may be nil (no
// history: the charts show the current value only); now nil is time.Now.
// WithAnalyses adds the canary analyses, shown first. Mount it at the root
// of the listener: the page's links are relative.
func Handler(src Source, gates GateSource, hist *History, now func() time.Time, opts ...Option) http.Handler {
	if now == nil {
		now = time.Now
	}
	h := &handler{src: src, gates: gates, hist: hist, now: now}
	for _, o := range opts {
		o(h)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.page)
	mux.HandleFunc("GET /fragment", h.fragment)
	return mux
}

type handler struct {
	src      Source
	gates    GateSource
	hist     *History
	analyses AnalysisSource
	now      func() time.Time
}

func (h *handler) page(w http.ResponseWriter, r *http.Request) {
	h.serve(w, r, "page")
}

func (h *handler) fragment(w http.ResponseWriter, r *http.Request) {
	h.serve(w, r, "fragment")
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request, tmpl string) {
	windows := h.src.Windows()
	sel := r.URL.Query().Get("window")
	if sel == "" && len(windows) > 0 {
		sel = windows[0]
	}
	if len(windows) > 0 && !slices.Contains(windows, sel) {
		http.Error(w, "unknown window "+strconv.Quote(sel)+"; the windows are "+strings.Join(windows, ", "), http.StatusNotFound)
		return
	}
	v := h.view(sel, windows)
	var buf bytes.Buffer
	if err := pageTmpl.ExecuteTemplate(&buf, tmpl, v); err != nil {
		slog.Error("status page", "err", err)
		http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Content-Security-Policy", csp)
	w.Write(buf.Bytes())
}

// The view models of the templates.
type (
	pageView struct {
		Window   string
		Windows  []windowLink
		Updated  time.Time
		Analyses analysesView
		Arms     []armView
		Script   template.JS
		Style    template.CSS
		NoScript string // seconds
	}
	windowLink struct {
		Name, Query string
		Current     bool
	}
	armView struct {
		ID, Name string
		OK       bool
		Events   []eventCount
		Gates    []gateView
		Summary  string
		Metrics  []metricView
		Span     string // of the longest chart
	}
	eventCount struct {
		Name  string
		Count int64
		Known bool
	}
	gateView struct {
		gates.Result
		Badge     string // CSS class suffix: a known state or "unknown"
		Meta      string // "window 5m · page"
		ValueText string
		Need      string
	}
	metricView struct {
		Name    string
		Value   string
		Valid   bool
		Samples int64
		Chart   chart
	}
)

func (h *handler) view(sel string, windows []string) pageView {
	now := h.now()
	v := pageView{
		Window: sel, Updated: now.UTC(),
		Script: template.JS(script), Style: template.CSS(style),
		NoScript: secs(NoScriptRefresh),
	}
	for _, w := range windows {
		v.Windows = append(v.Windows, windowLink{Name: w, Query: "?window=" + url.QueryEscape(w), Current: w == sel})
	}
	v.Analyses = h.analysesView(now)
	for i, arm := range sortArms(h.src.Arms()) {
		v.Arms = append(v.Arms, h.armView(i, arm, sel, now))
	}
	return v
}

func (h *handler) armView(i int, arm, win string, now time.Time) armView {
	a := armView{ID: "arm-" + strconv.Itoa(i), Name: arm}
	var metrics map[string]Value
	var events map[string]int64
	if win != "" {
		metrics, events, a.OK = h.src.Report(arm, win)
	}
	for _, name := range eventOutcomes {
		n, ok := events[name]
		a.Events = append(a.Events, eventCount{Name: name, Count: n, Known: ok})
	}
	if h.gates != nil {
		counts := map[string]int{}
		for _, g := range h.gates.GateStates(arm) {
			gv := gateView{Result: g, Badge: badgeClass(g.State.String()), ValueText: "—", Need: opText(g.Op) + " " + fmtNum(g.Threshold)}
			if g.Value != nil {
				gv.ValueText = fmtNum(*g.Value)
			}
			gv.Meta = "window " + g.Window
			if g.Severity != "" {
				gv.Meta += " · " + g.Severity
			}
			counts[gv.Badge]++
			a.Gates = append(a.Gates, gv)
		}
		a.Summary = gateSummary(counts, len(a.Gates))
	}
	var span time.Duration
	for _, name := range orderMetrics(metrics) {
		m := metrics[name]
		mv := metricView{Name: name, Value: "—", Samples: m.Samples}
		if m.Valid && usable(Point{Value: m.Value, Valid: true}) {
			mv.Value, mv.Valid = fmtNum(m.Value), true
		}
		var pts []Point
		if h.hist != nil {
			pts = h.hist.Series(arm, win, name)
		}
		// The chart ends with the value shown next to it.
		if len(pts) == 0 || now.After(pts[len(pts)-1].T) {
			pts = append(pts, Point{T: now, Value: m.Value, Valid: mv.Valid, Samples: m.Samples})
		}
		mv.Chart = layoutChart(name, pts)
		if d := pts[len(pts)-1].T.Sub(pts[0].T); d > span {
			span = d
		}
		a.Metrics = append(a.Metrics, mv)
	}
	if span > 0 {
		a.Span = fmtSpan(span)
	}
	return a
}

// badgeClass maps a gate state to its badge; anything unexpected is shown
// as is, grey.
func badgeClass(state string) string {
	switch state {
	case "ok", "pending", "firing", "resolved", "inconclusive":
		return state
	}
	return "unknown"
}

// gateSummary is the arm heading's line: "2 firing, 1 pending, 5 ok of 8
// gates".
func gateSummary(counts map[string]int, total int) string {
	if total == 0 {
		return "no gates"
	}
	var parts []string
	for _, s := range []string{"firing", "pending", "inconclusive", "resolved", "ok", "unknown"} {
		if n := counts[s]; n > 0 {
			parts = append(parts, strconv.Itoa(n)+" "+s)
		}
	}
	unit := " gates"
	if total == 1 {
		unit = " gate"
	}
	return strings.Join(parts, ", ") + " of " + strconv.Itoa(total) + unit
}

// sortArms orders arms: live, shadow, canary, then the others by name.
func sortArms(arms []string) []string {
	arms = slices.Clone(arms)
	rank := func(a string) int {
		if i := slices.Index(armOrder, a); i >= 0 {
			return i
		}
		return len(armOrder)
	}
	slices.SortStableFunc(arms, func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a, b))
	})
	return slices.Compact(arms)
}

// orderMetrics lists the metrics in window.MetricNames order (the order of
// SPEC §4), the cut-offs taken from the per-k names present; names it does
// not know come last, by name.
func orderMetrics(metrics map[string]Value) []string {
	var ks []int
	for name := range metrics {
		if s, ok := window.Lookup(name); ok && s.Row.Over == window.PerK {
			ks = append(ks, s.K)
		}
	}
	slices.Sort(ks)
	var out []string
	for _, name := range window.MetricNames(slices.Compact(ks)) {
		if _, ok := metrics[name]; ok {
			out = append(out, name)
		}
	}
	known := len(out)
	for name := range metrics {
		if !slices.Contains(out[:known], name) {
			out = append(out, name)
		}
	}
	slices.Sort(out[known:])
	return out
}

// script refreshes the dynamic part in place. It keeps the last content
// (dimmed, with a note) when a refresh fails.
var script = `(function () {
  var box = document.getElementById("live"), note = document.getElementById("refresh-note");
  if (!box || !window.fetch) return;
  note.textContent = "Updates every ` + secs(RefreshInterval) + ` s.";
  function refresh() {
    fetch("fragment" + window.location.search, {cache: "no-store"})
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.text(); })
      .then(function (html) {
        var open = [].map.call(box.querySelectorAll("details[open][id]"), function (d) { return d.id; });
        box.innerHTML = html;
        open.forEach(function (id) { var d = document.getElementById(id); if (d) d.open = true; });
        box.removeAttribute("data-stale");
        note.textContent = "Updates every ` + secs(RefreshInterval) + ` s.";
      })
      .catch(function (e) {
        box.setAttribute("data-stale", "true");
        note.textContent = "Update failed (" + e.message + "): showing the last data received.";
      });
  }
  window.setInterval(refresh, ` + strconv.FormatInt(RefreshInterval.Milliseconds(), 10) + `);
})();`

const style = `
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 14px; color: #1b1f24; background: #fff; }
body { margin: 0 auto; padding: 0 16px 24px; max-width: 1400px; }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 8px 24px; border-bottom: 1px solid #d0d7de; padding: 8px 0; }
h1 { font-size: 20px; margin: 0; }
h2 { font-size: 17px; margin: 0 0 6px; }
nav a { padding: 2px 8px; border: 1px solid #d0d7de; border-radius: 4px; text-decoration: none; color: #0a3069; margin-right: 4px; }
nav a[aria-current="page"] { background: #0a3069; color: #fff; border-color: #0a3069; font-weight: 600; }
.updated, .note { color: #57606a; margin: 8px 0; }
#live[data-stale] { opacity: 0.55; }
.arms { display: grid; grid-template-columns: repeat(auto-fit, minmax(600px, 1fr)); gap: 16px; }
section.arm { border: 1px solid #d0d7de; border-radius: 6px; padding: 10px 12px; min-width: 0; overflow-x: auto; }
.summary { font-weight: 400; font-size: 14px; color: #57606a; margin-left: 8px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 10px; }
caption { text-align: left; font-weight: 600; padding: 2px 0 4px; }
th, td { padding: 2px 5px; border-bottom: 1px solid #eaeef2; text-align: left; vertical-align: middle; }
thead th { font-size: 12px; color: #57606a; font-weight: 600; }
tbody th { font-weight: 400; font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 13px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.none { color: #8c959f; text-align: right; }
td.chart { width: 262px; padding: 0 4px; }
table.checks td.chart { width: auto; }
.badge { display: inline-block; min-width: 5.5em; text-align: center; padding: 1px 6px; border-radius: 10px; font-size: 12px; font-weight: 600; border: 1px solid transparent; }
.badge-ok { background: #dafbe1; color: #116329; border-color: #4ac26b; }
.badge-pending { background: #fff8c5; color: #7d4e00; border-color: #d4a72c; }
.badge-firing { background: #ffebe9; color: #a40e26; border-color: #ff8182; }
.badge-resolved { background: #ddf4ff; color: #0550ae; border-color: #54aeff; }
.badge-inconclusive, .badge-unknown { background: #f6f8fa; color: #57606a; border-color: #afb8c1; }
.reason { display: block; max-width: 28em; font-size: 12px; color: #57606a; font-family: system-ui, sans-serif; }
.meta { display: block; font-size: 12px; color: #57606a; font-family: system-ui, sans-serif; }
table.gates td, table.gates th { font-size: 13px; }
svg { display: block; }
svg .grid { stroke: #d0d7de; stroke-width: 1; }
svg .line { fill: none; stroke: #0969da; stroke-width: 1.5; stroke-linejoin: round; }
svg .dot { fill: #0969da; }
svg .last { fill: #1b1f24; stroke: #fff; stroke-width: 1; }
svg text { font-size: 10px; fill: #57606a; font-family: system-ui, sans-serif; }
.analyses { display: flex; flex-direction: column; gap: 14px; margin: 4px 0 18px; }
.analysis { border: 1px solid #d0d7de; border-left: 6px solid #8c959f; border-radius: 6px; padding: 8px 12px; min-width: 0; overflow-x: auto; }
.analysis.verdict-pass { border-left-color: #1a7f37; }
.analysis.verdict-fail { border-left-color: #cf222e; }
.analysis.verdict-inconclusive { border-left-color: #9a6700; }
details.analysis > summary { cursor: pointer; }
details.analysis > summary h2 { display: inline; }
details.analysis:not([open]) { padding-bottom: 8px; }
.an-id { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.verdict-reason { margin: 2px 0; font-weight: 600; }
.verdict-fail .verdict-reason { color: #a40e26; }
.verdict-inconclusive .verdict-reason { color: #7d4e00; }
.meta-line { margin: 2px 0 4px; color: #57606a; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
.badge-pass { background: #dafbe1; color: #116329; border-color: #4ac26b; }
.badge-fail { background: #ffebe9; color: #a40e26; border-color: #ff8182; }
.analysis .badge-inconclusive { background: #fff8c5; color: #7d4e00; border-color: #d4a72c; }
.badge-no_data { background: #f6f8fa; color: #8c959f; border-color: #d0d7de; font-weight: 400; }
table.checks th[scope="row"] { width: 15em; }
table.checks .reason { max-width: 22em; }
td.est { white-space: nowrap; }
td.est strong { font-size: 14px; }
td.est .meta { font-variant-numeric: tabular-nums; }
tr.check-no_data th, tr.check-no_data td { color: #8c959f; }
tr.check-no_data svg { opacity: 0.6; }
td.arms-cell { white-space: nowrap; }
td.arms-cell svg { display: inline-block; vertical-align: middle; }
.arm-values { display: inline-block; vertical-align: middle; font-size: 12px; color: #57606a; font-variant-numeric: tabular-nums; }
.arm-values span { display: block; }
.key-cand { color: #0969da; }
.key-base { color: #1b1f24; font-weight: 700; }
svg .failzone { fill: #ffebe9; }
svg .axis { stroke: #8c959f; stroke-width: 1; }
svg .zero { stroke: #6e7781; stroke-width: 1; }
svg .limit { stroke: #cf222e; stroke-width: 1.5; stroke-dasharray: 4 2; }
svg .bar-pass { fill: #2da44e; }
svg .bar-fail { fill: #cf222e; }
svg .bar-inconclusive, svg .bar-no_data, svg .bar-unknown { fill: #bf8700; }
svg .est { fill: #1b1f24; stroke: #fff; stroke-width: 1.2; }
svg .frame { fill: none; stroke: #d0d7de; }
svg .band { fill: #0969da; fill-opacity: 0.2; stroke: #0969da; stroke-opacity: 0.45; stroke-width: 0.8; }
svg .estline { fill: none; stroke: #0969da; stroke-width: 1.5; stroke-linejoin: round; }
svg .cand { fill: #0969da; }
svg .base { fill: none; stroke: #1b1f24; stroke-width: 1.5; }
@media (prefers-color-scheme: dark) {
  :root { color-scheme: dark; color: #e6edf3; background: #0d1117; }
  nav a { color: #79c0ff; border-color: #30363d; }
  nav a[aria-current="page"] { background: #1f6feb; color: #fff; }
  section.arm, header { border-color: #30363d; }
  th, td { border-color: #21262d; }
  .updated, .note, thead th, .summary, .reason, .meta, svg text { color: #8b949e; fill: #8b949e; }
  svg .grid { stroke: #30363d; }
  svg .line { stroke: #58a6ff; }
  svg .dot { fill: #58a6ff; }
  svg .last { fill: #e6edf3; stroke: #0d1117; }
  .analysis { border-color: #30363d; }
  .analysis.verdict-pass { border-left-color: #3fb950; }
  .analysis.verdict-fail { border-left-color: #f85149; }
  .analysis.verdict-inconclusive { border-left-color: #d29922; }
  .meta-line, .arm-values { color: #8b949e; }
  .verdict-fail .verdict-reason { color: #ff7b72; }
  .verdict-inconclusive .verdict-reason { color: #e3b341; }
  svg .failzone { fill: #3d1a1d; }
  svg .frame { stroke: #30363d; }
  svg .est { fill: #e6edf3; stroke: #0d1117; }
  svg .band { fill: #58a6ff; stroke: #58a6ff; }
  svg .estline { stroke: #58a6ff; }
  svg .cand { fill: #58a6ff; }
  svg .base { stroke: #e6edf3; }
  .key-cand { color: #58a6ff; }
  .key-base { color: #e6edf3; }
}
`

// csp allows exactly the inline script and style above, requests to the
// page's own origin, and nothing else.
var csp = "default-src 'none'; script-src " + hashSource(script) + "; style-src " + hashSource(style) +
	"; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func hashSource(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"rfc3339": func(t time.Time) string { return t.Format(time.RFC3339) },
	"clock":   func(t time.Time) string { return t.Format("2006-01-02 15:04:05 MST") },
}).Parse(pageHTML))

const pageHTML = `{{define "page"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>shadoweval status</title>
<noscript><meta http-equiv="refresh" content="{{.NoScript}}"></noscript>
<style>{{.Style}}</style>
</head>
<body>
<header>
<h1>shadoweval status</h1>
<nav aria-label="Window">Window:{{range .Windows}} <a href="{{.Query}}"{{if .Current}} aria-current="page"{{end}}>{{.Name}}</a>{{end}}</nav>
<p class="note" id="refresh-note" role="status">Reloads every {{.NoScript}} s.</p>
</header>
<main id="live">{{template "fragment" .}}</main>
<script>{{.Script}}</script>
</body>
</html>
{{end}}

{{define "fragment"}}<p class="updated">Window <strong>{{.Window}}</strong> at <time datetime="{{rfc3339 .Updated}}">{{clock .Updated}}</time></p>
{{with .Analyses}}{{if .Shown}}<div class="analyses">
{{range .Running}}{{template "analysis" .}}{{else}}<p class="none-running">No canary analysis is running.</p>
{{end}}{{range .Ended}}{{template "analysis" .}}{{end}}</div>
{{end}}{{end}}{{if not .Arms}}<p>No arm has any event yet.</p>{{end}}
<div class="arms">
{{range .Arms}}<section class="arm" aria-labelledby="{{.ID}}">
<h2 id="{{.ID}}">{{.Name}}{{if .Summary}} <span class="summary">{{.Summary}}</span>{{end}}</h2>
{{if not .OK}}<p>No data for this arm in window {{$.Window}}.</p>{{end}}
<table class="events">
<caption>Events, window {{$.Window}}</caption>
<thead><tr>{{range .Events}}<th scope="col" class="num">{{.Name}}</th>{{end}}</tr></thead>
<tbody><tr>{{range .Events}}{{if .Known}}<td class="num">{{.Count}}</td>{{else}}<td class="none">—</td>{{end}}{{end}}</tr></tbody>
</table>
{{if .Gates}}<table class="gates">
<caption>Gates</caption>
<thead><tr><th scope="col">Gate</th><th scope="col">State</th><th scope="col">Metric</th><th scope="col" class="num">Value</th><th scope="col">Threshold</th><th scope="col" class="num">Samples</th></tr></thead>
<tbody>
{{range .Gates}}<tr class="gate gate-{{.Badge}}"><th scope="row">{{.Gate}}<span class="meta">{{.Meta}}</span>{{if .Reason}}<span class="reason">{{.Reason}}</span>{{end}}</th><td><span class="badge badge-{{.Badge}}">{{.State}}</span></td><td>{{.Metric}}{{if .CompareTo}} − {{.CompareTo}}{{end}}</td><td class="num">{{.ValueText}}</td><td>{{.Need}}</td><td class="num">{{.Samples}}</td></tr>
{{end}}</tbody>
</table>{{end}}
<table class="metrics">
<caption>Metrics, window {{$.Window}}</caption>
<thead><tr><th scope="col">Metric</th><th scope="col" class="num">Value</th><th scope="col" class="num">Samples</th><th scope="col">History{{if .Span}}, last {{.Span}}{{end}}</th></tr></thead>
<tbody>
{{range .Metrics}}<tr><th scope="row">{{.Name}}</th>{{if .Valid}}<td class="num">{{.Value}}</td>{{else}}<td class="none">—</td>{{end}}<td class="num">{{.Samples}}</td><td class="chart">{{template "chart" .Chart}}</td></tr>
{{end}}</tbody>
</table>
</section>
{{end}}</div>
{{end}}

{{define "analysis"}}{{if .Ended}}<details class="analysis verdict-{{.Verdict}}" id="{{.DetailsID}}"><summary>{{template "analysis-head" .}}</summary>
{{else}}<section class="analysis verdict-{{.Verdict}}" aria-labelledby="{{.HeadID}}">
{{template "analysis-head" .}}
{{end}}{{if .Reason}}<p class="verdict-reason">{{.Reason}}</p>
{{end}}<p class="meta-line">Checks <strong>{{.CheckSet}}</strong> · since <time datetime="{{rfc3339 .Since}}">{{clock .Since}}</time>{{if .Age}} ({{.Age}}){{end}} · events: {{.Arm}} <strong>{{.Events.Arm}}</strong>, {{.Baseline}} <strong>{{.Events.Baseline}}</strong>{{if .Level}} · intervals {{.Level}}{{end}}</p>
<table class="checks">
<caption class="visually-hidden">Checks of analysis {{.Name}}</caption>
<thead><tr><th scope="col">Check</th><th scope="col">Verdict</th><th scope="col" class="num">{{.EstHeader}}</th><th scope="col">Interval now, vs tolerance</th><th scope="col">Interval over time{{if .Span}}, {{.Span}}{{end}}</th><th scope="col"><span class="key-cand" aria-hidden="true">●</span> {{.Arm}} and <span class="key-base" aria-hidden="true">○</span> {{.Baseline}}</th></tr></thead>
<tbody>
{{range .Checks}}<tr class="check check-{{.Verdict}}"><th scope="row"{{if and .Reason (not .ShowReason)}} title="{{.Reason}}"{{end}}>{{.Name}}{{if ne .Name .Metric}}<span class="meta">{{.Metric}}</span>{{end}}{{if .ShowReason}}<span class="reason">{{.Reason}}</span>{{end}}</th><td><span class="badge badge-{{.Verdict}}">{{.VerdictText}}</span></td><td class="num est">{{if .Estimate}}<strong>{{.Estimate}}</strong>{{else}}—{{end}}{{if .Interval}}<span class="meta">{{.Interval}}</span>{{end}}<span class="meta">{{.Limit}}</span>{{if .Paired}}<span class="meta paired">{{.Paired}}</span>{{end}}</td><td class="chart">{{template "ivchart" .Now}}</td><td class="chart">{{template "bandchart" .Over}}</td><td class="chart arms-cell">{{template "armschart" .Arms}}<span class="arm-values"><span>{{.ArmText}}</span><span>{{.BaseText}}</span></span></td></tr>
{{end}}</tbody>
</table>
{{if .Ended}}</details>{{else}}</section>{{end}}
{{end}}

{{define "analysis-head"}}<h2 id="{{.HeadID}}"><span class="badge badge-{{.Verdict}}">{{.VerdictText}}</span> Analysis <span class="an-id">{{.Name}}</span>: {{.Arm}} vs {{.Baseline}}{{if .EndText}} <span class="summary">{{.EndText}}</span>{{end}}</h2>{{end}}

{{define "ivchart"}}<svg class="ivc" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="{{.Title}}"><title>{{.Title}}</title>{{if .Empty}}<text x="{{.MidX}}" y="{{.EmptyY}}" text-anchor="middle">{{.EmptyText}}</text>{{else}}<rect class="failzone" x="{{.Fail.X}}" y="{{.Fail.Y}}" width="{{.Fail.W}}" height="{{.Fail.H}}"/><line class="axis" x1="{{.AxisLeft}}" x2="{{.AxisRight}}" y1="{{.AxisY}}" y2="{{.AxisY}}"/>{{if .HasZero}}<line class="zero" x1="{{.ZeroX}}" x2="{{.ZeroX}}" y1="{{.Top}}" y2="{{.Bottom}}"/>{{end}}<line class="limit" x1="{{.LimitX}}" x2="{{.LimitX}}" y1="{{.Top}}" y2="{{.Bottom}}"/>{{range .Ticks}}<text x="{{.X}}" y="{{.Y}}" text-anchor="{{.Anchor}}">{{.Label}}</text>{{end}}{{with .Bar}}<rect class="bar bar-{{$.Verdict}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}" rx="2"/>{{end}}{{range .Arrows}}<polygon class="bar bar-{{$.Verdict}}" points="{{.}}"/>{{end}}{{with .Dot}}<circle class="est" cx="{{.X}}" cy="{{.Y}}" r="3.5"/>{{end}}{{end}}</svg>{{end}}

{{define "bandchart"}}<svg class="bandc" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="{{.Title}}"><title>{{.Title}}</title>{{if .Empty}}<text x="{{.MidX}}" y="{{.EmptyY}}" text-anchor="middle">{{.EmptyText}}</text>{{else}}<rect class="frame" x="{{.PlotLeft}}" y="{{.PlotTop}}" width="{{.PlotW}}" height="{{.PlotH}}"/>{{range .Labels}}<text x="{{.X}}" y="{{.Y}}" text-anchor="{{.Anchor}}">{{.Label}}</text>{{end}}<svg class="plot" x="{{.PlotLeft}}" y="{{.PlotTop}}" width="{{.PlotW}}" height="{{.PlotH}}" viewBox="{{.PlotLeft}} {{.PlotTop}} {{.PlotW}} {{.PlotH}}"><rect class="failzone" x="{{.Fail.X}}" y="{{.Fail.Y}}" width="{{.Fail.W}}" height="{{.Fail.H}}"/>{{if .HasZero}}<line class="zero" x1="{{.PlotLeft}}" x2="{{.PlotRight}}" y1="{{.ZeroY}}" y2="{{.ZeroY}}"/>{{end}}{{range .Bands}}<polygon class="band" points="{{.}}"/>{{end}}{{range .Bars}}<rect class="band" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"/>{{end}}<line class="limit" x1="{{.PlotLeft}}" x2="{{.PlotRight}}" y1="{{.LimitY}}" y2="{{.LimitY}}"/>{{if .Path}}<path class="estline" d="{{.Path}}"/>{{end}}</svg>{{with .Last}}<circle class="est" cx="{{.X}}" cy="{{.Y}}" r="3"/>{{end}}{{end}}</svg>{{end}}

{{define "armschart"}}<svg class="armsc" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="{{.Title}}"><title>{{.Title}}</title>{{if .Empty}}<text x="{{.MidX}}" y="{{.EmptyY}}" text-anchor="middle">{{.EmptyText}}</text>{{else}}<line class="axis" x1="{{.AxisLeft}}" x2="{{.AxisRight}}" y1="{{.AxisY}}" y2="{{.AxisY}}"/>{{range .Ticks}}<line class="axis" x1="{{.X}}" x2="{{.X}}" y1="{{$.TickTop}}" y2="{{$.TickBottom}}"/><text x="{{.X}}" y="{{.Y}}" text-anchor="{{.Anchor}}">{{.Label}}</text>{{end}}{{if .HasLimit}}<line class="limit" x1="{{.LimitX}}" x2="{{.LimitX}}" y1="{{.LimitTop}}" y2="{{.LimitBottom}}"/>{{end}}{{with .Base}}<circle class="base" cx="{{.X}}" cy="{{.Y}}" r="6.5"/>{{end}}{{with .Cand}}<circle class="cand" cx="{{.X}}" cy="{{.Y}}" r="4"/>{{end}}{{end}}</svg>{{end}}

{{define "chart"}}<svg width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="{{.Title}}"><title>{{.Title}}</title>{{if .Empty}}<text x="{{.EmptyTextX}}" y="{{.EmptyTextY}}" text-anchor="middle">no history</text>{{else}}<line class="grid" x1="{{.PlotLeft}}" x2="{{.PlotRight}}" y1="{{.MaxY}}" y2="{{.MaxY}}"/>{{if .MinLabel}}<line class="grid" x1="{{.PlotLeft}}" x2="{{.PlotRight}}" y1="{{.MinY}}" y2="{{.MinY}}"/>{{end}}<text class="max" x="{{.LabelX}}" y="{{if .MinLabel}}{{.MaxLabelY}}{{else}}{{.EmptyTextY}}{{end}}" text-anchor="end">{{.MaxLabel}}</text>{{if .MinLabel}}<text class="min" x="{{.LabelX}}" y="{{.MinLabelY}}" text-anchor="end">{{.MinLabel}}</text>{{end}}{{if .Path}}<path class="line" d="{{.Path}}"/>{{end}}{{range .Dots}}<circle class="dot" cx="{{.X}}" cy="{{.Y}}" r="1.5"/>{{end}}{{with .Last}}<circle class="last" cx="{{.X}}" cy="{{.Y}}" r="3"/>{{end}}{{end}}</svg>{{end}}
`

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }

// opText writes a comparison as people do.
func opText(op string) string {
	switch op {
	case ">=":
		return "≥"
	case "<=":
		return "≤"
	}
	return op
}
