package analysis

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
)

// testHandlers: analysis "good" passes (healthy canary), "bad" fails
// (precision 20 points worse), "young" is inconclusive (few events).
func testHandlers(t *testing.T) (*Manager, http.Handler) {
	t.Helper()
	m := newTestManager(nil)
	rng := rand.New(rand.NewPCG(9, 9))
	for id, q := range map[string]quality{"good": healthy, "bad": {prec: 0.65, deltaS: 0.3}} {
		if _, _, err := m.Start(StartRequest{ID: id, Arm: "canary-" + id}, t0); err != nil {
			t.Fatal(err)
		}
		feed(t, m, rng, "canary-"+id, q, 20000, t0)
	}
	if _, _, err := m.Start(StartRequest{ID: "young", Arm: "canary-young"}, t0); err != nil {
		t.Fatal(err)
	}
	feed(t, m, rng, "canary-young", healthy, 30, t0)
	feed(t, m, rng, "live", healthy, 80000, t0)
	for id, want := range map[string]Verdict{"good": Pass, "bad": Fail, "young": Inconclusive} {
		an, _ := m.Get(id)
		if r := an.Result(); r.Verdict != want {
			t.Fatalf("fixture %s: %s (%s), want %s", id, r.Verdict, r.Reason, want)
		}
	}
	mux := http.NewServeMux()
	(&Handlers{M: m, Now: func() time.Time { return t0.Add(time.Hour) }, Admin: func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return false
		}
		return true
	}}).Register(mux)
	return m, mux
}

func do(t *testing.T, h http.Handler, method, target, body string, header ...string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var m map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &m)
	return rec, m
}

func TestVerdictEndpoint(t *testing.T) {
	m, h := testHandlers(t)
	for _, c := range []struct {
		target, verdict, analysis, arm string
	}{
		{"/api/v1/verdict?analysis=good", "pass", "good", "canary-good"},
		{"/api/v1/verdict?analysis=bad&arm=canary-bad", "fail", "bad", "canary-bad"},
		{"/api/v1/verdict?analysis=young", "inconclusive", "young", "canary-young"},
		// Unknown ids start an analysis; without analysis the id is the arm.
		{"/api/v1/verdict?analysis=new1&arm=blue", "inconclusive", "new1", "blue"},
		{"/api/v1/verdict", "inconclusive", "canary", "canary"},
		{"/api/v1/verdict?arm=green&baseline=blue", "inconclusive", "green", "green"},
	} {
		rec, body := do(t, h, "GET", c.target, "")
		if rec.Code != http.StatusOK || body["verdict"] != c.verdict || body["analysis"] != c.analysis || body["arm"] != c.arm {
			t.Errorf("%s: %d %v", c.target, rec.Code, body)
		}
		if checks, ok := body["checks"].([]any); !ok || len(checks) != 12 {
			t.Errorf("%s: checks %v", c.target, body["checks"])
		}
	}
	if an, ok := m.Get("green"); !ok || an.Spec().Baseline != "blue" {
		t.Error("baseline= not taken")
	}
	// The SPEC's fields of a check.
	_, body := do(t, h, "GET", "/api/v1/verdict?analysis=bad", "")
	c := body["checks"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "metric", "estimate", "interval", "tolerance", "samples", "verdict"} {
		if _, ok := c[k]; !ok {
			t.Errorf("check without %q: %v", k, c)
		}
	}
	if s := c["samples"].(map[string]any); s["arm"] != 20000.0 || s["baseline"] != 80000.0 {
		t.Errorf("samples %v", s)
	}
	for target, status := range map[string]int{
		"/api/v1/verdict?analysis=" + strings.Repeat("a", 200): http.StatusBadRequest,
		"/api/v1/verdict?analysis=x&arm=a%20b":                 http.StatusBadRequest,
		"/api/v1/verdict?analysis=x&checks=nope":               http.StatusBadRequest,
	} {
		if rec, body := do(t, h, "GET", target, ""); rec.Code != status || body["error"] == "" {
			t.Errorf("%s: %d %v, want %d with the reason", target, rec.Code, body, status)
		}
	}
}

// TestResponseFormat: the verdict endpoints' answers hold, field for
// field and value for value, what encoding/json makes of a Result (their
// layout is internal/httpjson's to test), and are not cached.
func TestResponseFormat(t *testing.T) {
	m, _ := testHandlers(t)
	good, _ := m.Get("good")
	young, _ := m.Get("young")
	for _, v := range []any{good.Result(), young.Result(), []Result{good.Result(), young.Result()}} {
		rec := httptest.NewRecorder()
		writeJSON(rec, http.StatusOK, v)
		marshalled, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(marshalled, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || rec.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%v\n%s\nwant\n%s", rec.Header(), rec.Body, marshalled)
		}
	}
}

func TestAnalysesAPI(t *testing.T) {
	m, h := testHandlers(t)
	rec, body := do(t, h, "POST", "/api/v1/analyses", `{"id":"r1","arm":"canary","baseline":"live","checks":"canary"}`)
	if rec.Code != http.StatusCreated || body["analysis"] != "r1" {
		t.Errorf("create: %d %v", rec.Code, body)
	}
	if rec, _ := do(t, h, "POST", "/api/v1/analyses", `{"id":"r1"}`); rec.Code != http.StatusOK {
		t.Errorf("same id: %d, want 200", rec.Code)
	}
	for body, want := range map[string]string{
		`{"id":`:                    "bad analysis request",
		`{"id":"x","checks":"zzz"}`: `unknown check set "zzz"`,
		`{"id":"x","arm":"` + strings.Repeat("b", 129) + `"}`: "at most 128",
		`{"id":"x/y"}`:            `has '/'`,
		`{"id":"x"} {}`:           "trailing data",
		`{"id":"x","arm":"live"}`: "both",
		`{"id":7}`:                "cannot unmarshal",
	} {
		if rec, got := do(t, h, "POST", "/api/v1/analyses", body); rec.Code != http.StatusBadRequest || !strings.Contains(got["error"].(string), want) {
			t.Errorf("%s: %d %v, want 400 with %q", body, rec.Code, got, want)
		}
	}
	m.cfg.MaxActive = m.Active()
	if rec, got := do(t, h, "POST", "/api/v1/analyses", `{"id":"r2"}`); rec.Code != http.StatusTooManyRequests || !strings.Contains(got["error"].(string), "max_active") {
		t.Errorf("over max_active: %d %v", rec.Code, got)
	}
	if rec, got := do(t, h, "GET", "/api/v1/verdict?analysis=r3", ""); rec.Code != http.StatusTooManyRequests {
		t.Errorf("verdict over max_active: %d %v", rec.Code, got)
	}
	// Reading stays open, ending wants the admin token.
	rec, got := do(t, h, "GET", "/api/v1/analyses", "")
	if list, _ := got["analyses"].([]any); rec.Code != http.StatusOK || len(list) != m.Active() {
		t.Errorf("list: %d %v", rec.Code, got)
	}
	if rec, _ := do(t, h, "DELETE", "/api/v1/analyses/good", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("delete without token: %d", rec.Code)
	}
	if an, _ := m.Get("good"); !an.Running() {
		t.Error("ended without the token")
	}
	if rec, got := do(t, h, "DELETE", "/api/v1/analyses/good", "", "Authorization", "Bearer s3cret"); rec.Code != http.StatusOK || got["ended"] == nil {
		t.Errorf("delete: %d %v", rec.Code, got)
	}
	if rec, got := do(t, h, "GET", "/api/v1/analyses/good", ""); rec.Code != http.StatusOK || got["ended"] == nil || got["history"] == nil {
		t.Errorf("ended analysis: %d %v", rec.Code, got)
	}
	if rec, _ := do(t, h, "POST", "/api/v1/analyses", `{"id":"r2"}`); rec.Code != http.StatusCreated {
		t.Errorf("after ending one: %d, want 201", rec.Code)
	}
	for _, c := range []struct{ method, target string }{{"GET", "/api/v1/analyses/nope"}, {"DELETE", "/api/v1/analyses/nope"}} {
		if rec, _ := do(t, h, c.method, c.target, "", "Authorization", "Bearer s3cret"); rec.Code != http.StatusNotFound {
			t.Errorf("%s %s: %d", c.method, c.target, rec.Code)
		}
	}
}

// A request that names an existing analysis but asks for another arm,
// baseline or check set is refused (409), not answered with the existing
// analysis' verdict; a POST body with a key the API does not take, and a
// Flagger webhook with metadata it does not read, are refused (400)
// rather than read as the defaults. Nothing is started by any of them.
func TestRequestsThatAskForSomethingElse(t *testing.T) {
	m, h := testHandlers(t)
	before := len(m.List())
	for _, c := range []struct {
		method, target, body string
		status               int
		says                 string
	}{
		{"GET", "/api/v1/verdict?analysis=bad&arm=whatever", "", http.StatusConflict, `judges arm "canary-bad", not "whatever"`},
		{"GET", "/api/v1/verdict?analysis=good&baseline=shadow", "", http.StatusConflict, `judges baseline "live", not "shadow"`},
		{"GET", "/api/v1/verdict?analysis=good&checks=eligibility", "", http.StatusConflict, `judges checks "canary", not "eligibility"`},
		{"POST", "/api/v1/analyses", `{"id":"good","arm":"canary"}`, http.StatusConflict, `judges arm "canary-good"`},
		{"POST", "/api/v1/analyses", `{"id":"x2","arm":"canary","baselin":"shadow"}`, http.StatusBadRequest, `unknown field "baselin"`},
		{"POST", "/api/v1/flagger/rollout", `{"name":"p","namespace":"n","metadata":{"analysiss":"good"}}`, http.StatusBadRequest, `unknown metadata key "analysiss"`},
		{"POST", "/api/v1/flagger/rollout", `{"name":"p","namespace":"n","metadata":{"analysis":"good","arm":"canary"}}`, http.StatusConflict, `judges arm "canary-good"`},
		{"POST", "/judge", `{"metricSetPairList":[{"name":"m","id":"1","tags":{"analysis":"good","arm":"canary"}}]}`, http.StatusConflict, `judges arm "canary-good"`},
	} {
		rec, body := do(t, h, c.method, c.target, c.body)
		if rec.Code != c.status || !strings.Contains(fmt.Sprint(body["error"]), c.says) {
			t.Errorf("%s %s %s: %d %v, want %d saying %q", c.method, c.target, c.body, rec.Code, body, c.status, c.says)
		}
	}
	if n := len(m.List()); n != before {
		t.Errorf("%d analyses after the refused requests, want %d", n, before)
	}
	// Naming only what matches, or nothing but the id, reads the analysis.
	for _, target := range []string{"/api/v1/verdict?analysis=bad", "/api/v1/verdict?analysis=bad&arm=canary-bad&baseline=live&checks=canary"} {
		if rec, body := do(t, h, "GET", target, ""); rec.Code != http.StatusOK || body["analysis"] != "bad" {
			t.Errorf("%s: %d %v", target, rec.Code, body)
		}
	}
}

func TestFlaggerHooks(t *testing.T) {
	_, h := testHandlers(t)
	body := func(analysis string) string {
		return `{"name":"podinfo","namespace":"test","phase":"Progressing","checksum":"abc","metadata":{"analysis":"` + analysis + `"}}`
	}
	for _, c := range []struct {
		hook string
		want map[string]int // analysis → status
	}{
		{"rollout", map[string]int{"good": 200, "young": 200, "bad": 412}},
		{"confirm-traffic-increase", map[string]int{"good": 200, "young": 200, "bad": 412}},
		{"confirm-promotion", map[string]int{"good": 200, "young": 412, "bad": 412}},
		{"rollback", map[string]int{"good": 412, "young": 412, "bad": 200}},
	} {
		for id, status := range c.want {
			rec, got := do(t, h, "POST", "/api/v1/flagger/"+c.hook, body(id))
			if rec.Code != status || got["hook"] != c.hook || got["analysis"] != id {
				t.Errorf("%s on %s: %d %v, want %d", c.hook, id, rec.Code, got["verdict"], status)
			}
		}
	}
	// Without metadata: one analysis per canary and revision, canary vs
	// live; the eligibility hooks read the shadow arm's eligibility set.
	rec, got := do(t, h, "POST", "/api/v1/flagger/rollout", `{"name":"podinfo","namespace":"test","checksum":"abc"}`)
	if rec.Code != 200 || got["analysis"] != "flagger:test:podinfo:abc" || got["arm"] != "canary" || got["baseline"] != "live" || got["check_set"] != "canary" {
		t.Errorf("rollout without metadata: %d %v", rec.Code, got)
	}
	rec, got = do(t, h, "POST", "/api/v1/flagger/confirm-rollout", `{"name":"podinfo","namespace":"test","checksum":"abc"}`)
	if rec.Code != 412 || got["analysis"] != "flagger:test:podinfo:abc.eligibility" || got["arm"] != "shadow" || got["check_set"] != "eligibility" {
		t.Errorf("confirm-rollout: %d %v", rec.Code, got)
	}
	// pre-rollout counts failures towards rollback: inconclusive is 200.
	if rec, got := do(t, h, "POST", "/api/v1/flagger/pre-rollout", `{"name":"podinfo","namespace":"test","checksum":"abc"}`); rec.Code != 200 || got["verdict"] != "inconclusive" {
		t.Errorf("pre-rollout: %d %v", rec.Code, got)
	}
	for target, status := range map[string]int{
		"/api/v1/flagger/nope": 404,
	} {
		if rec, _ := do(t, h, "POST", target, "{}"); rec.Code != status {
			t.Errorf("%s: %d", target, rec.Code)
		}
	}
	for _, b := range []string{`{"name":`, `[]`, `{"name":"a b","namespace":"x"}`} {
		if rec, got := do(t, h, "POST", "/api/v1/flagger/rollout", b); rec.Code != 400 || got["error"] == "" {
			t.Errorf("body %s: %d %v, want 400", b, rec.Code, got)
		}
	}
}

func TestKayentaJudge(t *testing.T) {
	_, h := testHandlers(t)
	req := func(analysis string) string {
		return `{"canaryConfig":{"name":"x","judge":{"name":"shadoweval","judgeConfigurations":{"analysis":"` + analysis + `"}}},"scoreThresholds":{"pass":95,"marginal":75},"metricSetPairList":[]}`
	}
	for id, want := range map[string]struct {
		score float64
		class string
	}{"good": {100, "Pass"}, "bad": {0, "Fail"}, "young": {85, "Nodata"}} {
		rec, got := do(t, h, "POST", "/judge", req(id))
		score := got["score"].(map[string]any)
		if rec.Code != 200 || score["score"] != want.score || score["classification"] != want.class || got["judgeName"] != "shadoweval" {
			t.Errorf("%s: %d %v", id, rec.Code, score)
		}
		if res := got["results"].([]any); len(res) != 12 {
			t.Errorf("%s: %d results", id, len(res))
		}
	}
	_, got := do(t, h, "POST", "/judge", req("bad"))
	for _, r := range got["results"].([]any) {
		r := r.(map[string]any)
		if r["name"] == "precision" && r["classification"] != "Low" {
			t.Errorf("failing precision classified %v", r["classification"])
		}
	}
	// Read by Orca's rule, every verdict does what it should: fail ends
	// the canary, pass promotes it, inconclusive does neither; without
	// thresholds Spinnaker's defaults (75, 95) hold.
	for _, c := range []struct {
		body               string
		marginal, pass     float64
		analysis           string
		terminal, promoted bool
	}{
		{`{"scoreThresholds":{"pass":95,"marginal":75}}`, 75, 95, "young", false, false},
		{`{"scoreThresholds":{"pass":80,"marginal":79}}`, 79, 80, "young", false, false},
		{`{}`, 75, 95, "young", false, false},
		{`{"scoreThresholds":{"pass":95,"marginal":75}}`, 75, 95, "bad", true, false},
		{`{"scoreThresholds":{"pass":95,"marginal":75}}`, 75, 95, "good", false, true},
		// Thresholds that leave no room: inconclusive ends the canary
		// rather than promoting it.
		{`{"scoreThresholds":{"pass":60,"marginal":75}}`, 75, 60, "young", true, false},
	} {
		_, got := do(t, h, "POST", "/judge?analysis="+c.analysis, c.body)
		score := got["score"].(map[string]any)["score"].(float64)
		terminal, promoted := orcaReads(score, c.marginal, c.pass)
		if terminal != c.terminal || promoted != c.promoted {
			t.Errorf("%s with %s: score %v, Orca: terminal %v, promoted %v; want %v, %v", c.analysis, c.body, score, terminal, promoted, c.terminal, c.promoted)
		}
	}
	if rec, _ := do(t, h, "POST", "/judge", `{"canaryConfig":`); rec.Code != 400 {
		t.Errorf("bad body: %d", rec.Code)
	}
}

// orcaReads applies Orca's rules to an interval's score: the canary ends
// when the score is not above marginal (MonitorKayentaCanaryTask: "Canary
// score is not above the marginal score threshold"), and a last interval
// promotes only at pass or above.
func orcaReads(score, marginal, pass float64) (terminal, promoted bool) {
	if score <= marginal {
		return true, false
	}
	return false, score >= pass
}

// Whatever a client sends to the API, it never panics and never answers
// 5xx.
func FuzzHandlers(f *testing.F) {
	for _, s := range []string{
		"POST /api/v1/analyses {\"id\":\"a\",\"arm\":\"canary\"}",
		"POST /api/v1/flagger/rollout {\"name\":\"n\",\"namespace\":\"ns\",\"metadata\":{\"arm\":\"x\"}}",
		"POST /judge {\"canaryConfig\":{\"judge\":{\"judgeConfigurations\":{\"arm\":\"c\"}}}}",
		"GET /api/v1/verdict?analysis=z&arm=c",
		"DELETE /api/v1/analyses/a ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		method, rest, _ := strings.Cut(s, " ")
		target, body, _ := strings.Cut(rest, " ")
		if !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " \r\n#") {
			return
		}
		m := newTestManager(config.DefaultCheckSets())
		mux := http.NewServeMux()
		(&Handlers{M: m, Now: func() time.Time { return t0 }}).Register(mux)
		req, err := http.NewRequest(method, "http://x"+target, strings.NewReader(body))
		if err != nil {
			return
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, target, body, rec.Code, rec.Body)
		}
	})
}
