package statuspage

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/testenv"
)

func get(t *testing.T, h http.Handler, target string) (int, http.Header, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, rec.Result().Header, string(body)
}

func testHandler() (http.Handler, *fakeSource) {
	src := newFakeSource()
	hist := NewHistory(60)
	fillHistory(hist, src, t0.Add(-10*time.Second))
	return Handler(src, newFakeGates(), hist, func() time.Time { return t0 }), src
}

func TestPage(t *testing.T) {
	h, _ := testHandler()
	code, hdr, body := get(t, h, "/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d: %s", code, body)
	}
	if ct := hdr.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if !strings.HasPrefix(body, "<!DOCTYPE html>") || !strings.Contains(body, `<main id="live">`) {
		t.Errorf("not the full page:\n%.300s", body)
	}
	// both arms, live first
	live, canary := strings.Index(body, `<h2 id="arm-0">live`), strings.Index(body, `<h2 id="arm-1">canary`)
	if live < 0 || canary < 0 || live > canary {
		t.Errorf("arms: live at %d, canary at %d (want both, live first)", live, canary)
	}
	// the firing gate, with its state as text, its value and threshold
	firing := regexp.MustCompile(`<tr class="gate gate-firing"><th scope="row">precision_floor<span class="meta">window 5m · page</span><span class="reason">precision 0.71 &lt; 0.8 for 5m</span></th><td><span class="badge badge-firing">firing</span></td><td>precision</td><td class="num">0.71</td><td>≥ 0.8</td><td class="num">812</td></tr>`)
	if !firing.MatchString(body) {
		t.Errorf("no firing gate row for canary's precision_floor:\n%s", section(body, "canary"))
	}
	for _, s := range []string{
		`badge-pending">pending<`, `badge-resolved">resolved<`, `badge-inconclusive">inconclusive<`, `badge-ok">ok<`,
		`<td>recall_at_5 − live</td><td class="num">—</td>`, // no value, compare_to
		`1 firing, 1 pending, 1 inconclusive, 1 ok of 4 gates`,
		`1 resolved of 1 gate`,
		`<span class="meta">window 1h</span>`, // no severity
		`<th scope="col">History, last 5m</th>`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	// recall_at_5 has no value: "—", and its chart says so
	if !regexp.MustCompile(`<tr><th scope="row">recall_at_5</th><td class="none">—</td><td class="num">0</td><td class="chart"><svg [^>]*><title>recall_at_5: no value recorded yet</title>`).MatchString(body) {
		t.Errorf("recall_at_5 row:\n%s", row(body, "recall_at_5"))
	}
	// a metric with a value and a chart with its history
	r := row(body, "precision")
	for _, s := range []string{`<td class="num">0.91</td><td class="num">812</td>`, `<title>precision: last 0.91, min`, `<path class="line" d="M`, `<circle class="last"`, `30 of 31 points with a value`} {
		if !strings.Contains(r, s) {
			t.Errorf("precision row lacks %q:\n%s", s, r)
		}
	}
	// metrics in SPEC §4 order
	order := []string{"precision", "chr", "under_refusal", "over_refusal", "recall_at_5", "mean_precision_at_5", "mean_recall_at_5", "anchor_proximity", "delta_s_median"}
	last := -1
	for _, m := range order {
		i := strings.Index(body, `<th scope="row">`+m+`</th>`)
		if i < last {
			t.Errorf("metric %s out of order", m)
		}
		last = i
	}
	// event counts
	for _, s := range []string{`<th scope="col" class="num">join_timeout</th>`, `<td class="num">812</td><td class="num">3</td><td class="num">2</td><td class="num">1</td><td class="num">0</td><td class="num">4</td>`} {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks events %q", s)
		}
	}
	// the window links, the current one marked
	if !strings.Contains(body, `<a href="?window=5m" aria-current="page">5m</a> <a href="?window=1h">1h</a>`) {
		t.Errorf("window nav:\n%s", testenv.Between(body, "<nav", "</nav>"))
	}
	if !strings.Contains(body, `<noscript><meta http-equiv="refresh" content="15"></noscript>`) {
		t.Error("no noscript refresh")
	}
}

func TestPageHasNoExternalResources(t *testing.T) {
	h, _ := testHandler()
	withAnalyses := Handler(newFakeSource(), nil, nil, func() time.Time { return t0 }, WithAnalyses(knownAnalyses()))
	for _, target := range []string{"/", "/fragment", "/?window=1h", "analyses/", "analyses/fragment"} {
		h := h
		if rest, ok := strings.CutPrefix(target, "analyses"); ok {
			h, target = withAnalyses, rest
		}
		_, hdr, body := get(t, h, target)
		for _, m := range regexp.MustCompile(`(?i)\b(?:src|href|action|xlink:href)\s*=\s*["']?([^"'\s>]*)`).FindAllStringSubmatch(body, -1) {
			u := m[1]
			if strings.Contains(u, "//") || strings.Contains(u, ":") {
				t.Errorf("%s: non-relative link %q", target, m[0])
			}
		}
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") || strings.Contains(body, "@import") || strings.Contains(body, "url(") || strings.Contains(body, "@font-face") {
			t.Errorf("%s: an absolute URL, an import or a font in the page", target)
		}
		csp := hdr.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "script-src 'sha256-") {
			t.Errorf("%s: CSP %q", target, csp)
		}
	}
}

func TestFragment(t *testing.T) {
	h, _ := testHandler()
	code, _, body := get(t, h, "/fragment?window=1h")
	if code != http.StatusOK {
		t.Fatalf("GET /fragment = %d: %s", code, body)
	}
	if strings.Contains(body, "<html") || strings.Contains(body, "<script") || strings.Contains(body, `<main`) {
		t.Errorf("fragment holds more than the dynamic part:\n%.300s", body)
	}
	for _, s := range []string{`Window <strong>1h</strong>`, `<h2 id="arm-0">live`, `<h2 id="arm-1">canary`, `badge-firing">firing<`, `<caption>Metrics, window 1h</caption>`} {
		if !strings.Contains(body, s) {
			t.Errorf("fragment lacks %q", s)
		}
	}
	// no 1h history was recorded: the charts hold just the current value
	if r := row(body, "precision"); !strings.Contains(r, "1 of 1 points") {
		t.Errorf("precision 1h row:\n%s", r)
	}
}

func TestPageErrorsAndEdges(t *testing.T) {
	h, _ := testHandler()
	if code, _, body := get(t, h, "/?window=7d"); code != http.StatusNotFound || !strings.Contains(body, "5m, 1h") {
		t.Errorf("unknown window: %d %q", code, body)
	}
	if code, _, _ := get(t, h, "/nope"); code != http.StatusNotFound {
		t.Errorf("GET /nope = %d", code)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d", rec.Code)
	}

	// no gate source, no history, an arm without data, hostile names
	src := newFakeSource()
	src.arms = append(src.arms, `<script>alert(1)</script>`, "shadow", "zeta")
	code, _, body := get(t, Handler(src, nil, nil, nil), "/")
	if code != http.StatusOK {
		t.Fatalf("GET / = %d", code)
	}
	if strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("arm name not escaped")
	}
	if strings.Contains(body, "<caption>Gates</caption>") || strings.Contains(body, `class="badge`) {
		t.Error("gates shown without a gate source")
	}
	if !strings.Contains(body, "No data for this arm in window 5m.") {
		t.Error("no note for an arm without data")
	}
	var arms []string
	for _, m := range regexp.MustCompile(`<h2 id="arm-\d+">([^<]*)`).FindAllStringSubmatch(body, -1) {
		arms = append(arms, strings.TrimSpace(m[1]))
	}
	if strings.Join(arms, ",") != "live,shadow,canary,&lt;script&gt;alert(1)&lt;/script&gt;,zeta" {
		t.Errorf("arm order %v", arms)
	}

	// nothing yet
	if code, _, body := get(t, Handler(emptySource{}, nil, nil, nil), "/"); code != http.StatusOK || !strings.Contains(body, "No arm has any event yet.") {
		t.Errorf("empty: %d\n%s", code, body)
	}
}

type emptySource struct{}

func (emptySource) Arms() []string    { return nil }
func (emptySource) Windows() []string { return []string{"5m"} }
func (emptySource) Report(string, string) (map[string]Value, map[string]int64, bool) {
	return nil, nil, false
}

func TestCSPHashesMatchTheInlineCode(t *testing.T) {
	h, _ := testHandler()
	_, hdr, body := get(t, h, "/")
	js := testenv.Between(body, "<script>", "</script>")
	css := testenv.Between(body, "<style>", "</style>")
	csp := hdr.Get("Content-Security-Policy")
	if js != script || !strings.Contains(csp, hashSource(js)) {
		t.Error("the inline script is not the one the CSP allows")
	}
	if css != style || !strings.Contains(csp, hashSource(css)) {
		t.Error("the inline style is not the one the CSP allows")
	}
	if strings.Contains(body, ` style="`) {
		t.Error("a style attribute: the CSP blocks it")
	}
}

// section is the HTML of arm's section.
func section(body, arm string) string {
	i := strings.Index(body, `">`+arm)
	if i < 0 {
		return ""
	}
	j := strings.Index(body[i:], "</section>")
	if j < 0 {
		return body[i:]
	}
	return body[i : i+j]
}

// row is the first table row of metric.
func row(body, metric string) string {
	i := strings.Index(body, `<tr><th scope="row">`+metric+`</th>`)
	if i < 0 {
		return ""
	}
	return body[i : i+strings.Index(body[i:], "</tr>")]
}
