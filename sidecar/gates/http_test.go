package gates

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/config"
)

// httpEngine: arm canary passes, shadow fails (under_refusal too high),
// blue is inconclusive (too few samples); evaluated at t0.
func httpEngine(t *testing.T) (*Engine, *time.Time) {
	t.Helper()
	src := newFake("canary", "shadow", "blue")
	for arm, vals := range map[string][2][2]float64{
		"canary": {{900, 1000}, {1, 200}},
		"shadow": {{900, 1000}, {40, 200}},
		"blue":   {{9, 10}, {0, 10}},
	} {
		src.set(arm, "5m", "precision", prop(vals[0][0], vals[0][1]))
		src.set(arm, "5m", "under_refusal", prop(vals[1][0], vals[1][1]))
	}
	e := New([]config.Gate{
		gate("precision_floor", "precision", ">=", 0.8, 0),
		gate("under_refusal_ceiling", "under_refusal", "<=", 0.05, 0),
	}, src)
	e.Evaluate(t0)
	now := t0.Add(10 * time.Second)
	return e, &now
}

func do(t *testing.T, h http.Handler, method, target, body string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("%s %s: body is not a JSON object: %v\n%s", method, target, err, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	return rec, m
}

func TestVerdictHandler(t *testing.T) {
	e, now := httpEngine(t)
	h := VerdictHandler(e, func() time.Time { return *now })
	cases := []struct {
		target, verdict, arm, window string
		gates                        int
	}{
		{"/api/v1/verdict?arm=canary&window=5m", "pass", "canary", "5m", 2},
		{"/api/v1/verdict", "pass", "canary", "5m", 2}, // defaults: canary, first window
		{"/api/v1/verdict?arm=shadow", "fail", "shadow", "5m", 2},
		{"/api/v1/verdict?arm=blue", "inconclusive", "blue", "5m", 2},
		{"/api/v1/verdict?arm=nobody", "inconclusive", "nobody", "5m", 0},
		{"/api/v1/verdict?arm=canary&window=1h", "inconclusive", "canary", "1h", 0},
	}
	for _, c := range cases {
		rec, m := do(t, h, "GET", c.target, "")
		if rec.Code != http.StatusOK {
			t.Errorf("%s: status %d", c.target, rec.Code)
		}
		gates, ok := m["gates"].([]any)
		if m["verdict"] != c.verdict || m["arm"] != c.arm || m["window"] != c.window || !ok || len(gates) != c.gates {
			t.Errorf("%s: %v", c.target, m)
		}
		if c.verdict != "pass" && m["reason"] == "" {
			t.Errorf("%s: no reason", c.target)
		}
	}
	// A gate in the JSON.
	_, m := do(t, h, "GET", "/api/v1/verdict?arm=shadow", "")
	g := m["gates"].([]any)[1].(map[string]any)
	want := map[string]any{"gate": "under_refusal_ceiling", "metric": "under_refusal", "op": "<=", "window": "5m", "arm": "shadow",
		"state": "firing", "verdict": "fail", "value": 0.2, "threshold": 0.05, "samples": 200.0, "since": "2026-03-01T12:00:00Z", "active_at": "2026-03-01T12:00:00Z"}
	for k, v := range want {
		if g[k] != v {
			t.Errorf("gate JSON %s = %v, want %v", k, g[k], v)
		}
	}
	if _, ok := g["interval"]; ok {
		t.Error("interval present without confidence")
	}
	// Stale: inconclusive, gates still listed.
	*now = t0.Add(DefaultStaleAfter + time.Second)
	rec, m := do(t, h, "GET", "/api/v1/verdict?arm=canary", "")
	if rec.Code != 200 || m["verdict"] != "inconclusive" || len(m["gates"].([]any)) != 2 || !strings.Contains(m["reason"].(string), "older than") {
		t.Errorf("stale: %d %v", rec.Code, m)
	}
	// Never evaluated.
	e2 := New(nil, newFake())
	rec, m = do(t, VerdictHandler(e2, nil), "GET", "/api/v1/verdict", "")
	if rec.Code != 200 || m["verdict"] != "inconclusive" || m["window"] != "5m" {
		t.Errorf("never evaluated: %d %v", rec.Code, m)
	}
}

func TestFlaggerHandler(t *testing.T) {
	e, now := httpEngine(t)
	mux := http.NewServeMux()
	mux.Handle("POST /api/v1/flagger/{hook}", FlaggerHandler(e, func() time.Time { return *now }))
	body := func(arm string) string {
		if arm == "" {
			return `{"name":"podinfo","namespace":"test","phase":"Progressing","checksum":"abc","metadata":{"type":"bash"}}`
		}
		return `{"name":"podinfo","namespace":"test","phase":"Progressing","metadata":{"arm":"` + arm + `","window":"5m"}}`
	}
	promote := []string{"confirm-rollout", "pre-rollout", "rollout", "confirm-traffic-increase", "confirm-promotion"}
	for _, hook := range promote {
		for arm, want := range map[string]int{"canary": 200, "": 200, "shadow": 412, "blue": 412, "nobody": 412} {
			rec, m := do(t, mux, "POST", "/api/v1/flagger/"+hook, body(arm))
			if rec.Code != want || m["hook"] != hook {
				t.Errorf("%s arm %q: %d, want %d: %v", hook, arm, rec.Code, want, m)
			}
		}
	}
	for arm, want := range map[string]int{"canary": 412, "shadow": 200, "blue": 412, "nobody": 412} {
		rec, m := do(t, mux, "POST", "/api/v1/flagger/rollback", body(arm))
		if rec.Code != want || m["verdict"] == nil {
			t.Errorf("rollback arm %q: %d, want %d: %v", arm, rec.Code, want, m)
		}
	}
	// Empty body: the defaults.
	if rec, m := do(t, mux, "POST", "/api/v1/flagger/confirm-promotion", ""); rec.Code != 200 || m["arm"] != "canary" || m["window"] != "5m" {
		t.Errorf("empty body: %d %v", rec.Code, m)
	}
	// Window from metadata.
	if rec, m := do(t, mux, "POST", "/api/v1/flagger/confirm-promotion", `{"metadata":{"window":"1h"}}`); rec.Code != 412 || m["window"] != "1h" {
		t.Errorf("1h: %d %v", rec.Code, m)
	}
	for _, b := range []string{`{`, `[1]`, `{"metadata":{"arm":3}}`, `{"metadata":{}} x`, `"x"`} {
		if rec, m := do(t, mux, "POST", "/api/v1/flagger/rollout", b); rec.Code != 400 || m["error"] == nil {
			t.Errorf("body %s: %d %v", b, rec.Code, m)
		}
	}
	if rec, m := do(t, mux, "POST", "/api/v1/flagger/post-rollout", body("canary")); rec.Code != 404 || m["error"] == nil {
		t.Errorf("unknown hook: %d %v", rec.Code, m)
	}
	// Too big.
	big := `{"name":"` + strings.Repeat("x", maxFlaggerBody) + `"}`
	if rec, _ := do(t, mux, "POST", "/api/v1/flagger/rollout", big); rec.Code != 400 {
		t.Errorf("big body: %d", rec.Code)
	}
	// Mounted without a {hook} pattern: the last path segment.
	rec, _ := do(t, FlaggerHandler(e, func() time.Time { return *now }), "POST", "/hooks/rollback", body("shadow"))
	if rec.Code != 200 {
		t.Errorf("no path value: %d", rec.Code)
	}
	// Stale: promotion refused, rollback not triggered.
	*now = t0.Add(time.Hour)
	for hook, want := range map[string]int{"confirm-promotion": 412, "rollback": 412} {
		if rec, _ := do(t, mux, "POST", "/api/v1/flagger/"+hook, body("shadow")); rec.Code != want {
			t.Errorf("stale %s: %d, want %d", hook, rec.Code, want)
		}
	}
}

// kayentaBody is a RemoteJudgeRequest as Kayenta's RemoteJudge sends it.
func kayentaBody(judgeArm, tagArm string, thresholds string) string {
	cfgs := `{}`
	if judgeArm != "" {
		cfgs = `{"arm":"` + judgeArm + `","window":"5m"}`
	}
	tags := `{"env":"prod"}`
	if tagArm != "" {
		tags = `{"arm":"` + tagArm + `"}`
	}
	if thresholds == "" {
		thresholds = `{"pass":95.0,"marginal":75.0}`
	}
	return `{
  "canaryConfig": {
    "name": "retriever", "applications": ["rag"],
    "judge": {"name": "RemoteJudge-v1.0", "judgeConfigurations": ` + cfgs + `},
    "metrics": [{"name": "latency", "query": {"type": "prometheus", "metricName": "lat"}, "groups": ["perf"], "analysisConfigurations": {}, "scopeName": "default"}],
    "classifier": {"groupWeights": {"perf": 100}}
  },
  "scoreThresholds": ` + thresholds + `,
  "metricSetPairList": [{
    "name": "latency", "id": "m1", "tags": ` + tags + `,
    "values": {"control": [1.0, 2.0, "NaN"], "experiment": [1.5, 2.5, 3.0]},
    "scopes": {"control": {"startTimeIso": "2026-03-01T12:00:00Z", "startTimeMillis": 1772366400000, "stepMillis": 60000},
               "experiment": {"startTimeIso": "2026-03-01T12:00:00Z", "startTimeMillis": 1772366400000, "stepMillis": 60000}},
    "attributes": {"control": {"query": "lat{arm=\"live\"}"}, "experiment": {"query": "lat{arm=\"canary\"}"}}
  }]
}`
}

func TestKayentaJudgeHandler(t *testing.T) {
	e, now := httpEngine(t)
	h := KayentaJudgeHandler(e, func() time.Time { return *now })
	type want struct {
		score   float64
		class   string
		arm     string
		results int
	}
	cases := []struct {
		name, target, body string
		want               want
	}{
		{"default arm", "/judge", kayentaBody("", "", ""), want{100, "Pass", "canary", 2}},
		{"judge config arm", "/judge", kayentaBody("shadow", "", ""), want{0, "Fail", "shadow", 2}},
		{"tag arm", "/judge", kayentaBody("", "shadow", ""), want{0, "Fail", "shadow", 2}},
		{"query arm wins", "/judge?arm=canary", kayentaBody("shadow", "shadow", ""), want{100, "Pass", "canary", 2}},
		{"inconclusive: marginal", "/judge", kayentaBody("blue", "", ""), want{75, "Nodata", "blue", 2}},
		{"inconclusive: no thresholds", "/judge", kayentaBody("blue", "", "null"), want{50, "Nodata", "blue", 2}},
		{"inconclusive: marginal ≥ pass", "/judge", kayentaBody("blue", "", `{"pass":60,"marginal":60}`), want{59, "Nodata", "blue", 2}},
		{"no gates", "/judge?arm=nobody", kayentaBody("", "", ""), want{75, "Nodata", "nobody", 0}},
		{"empty body", "/judge", "", want{100, "Pass", "canary", 2}},
	}
	for _, c := range cases {
		rec, m := do(t, h, "POST", c.target, c.body)
		if rec.Code != 200 {
			t.Errorf("%s: status %d %v", c.name, rec.Code, m)
			continue
		}
		var res KayentaJudgeResult
		if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		if res.JudgeName != "shadoweval" || res.Score.Score != c.want.score || res.Score.Classification != c.want.class ||
			len(res.Results) != c.want.results || len(res.GroupScores) != 1 || res.GroupScores[0].Score != c.want.score ||
			!strings.Contains(res.Score.ClassificationReason, "arm "+c.want.arm) {
			t.Errorf("%s: %+v", c.name, res)
		}
		for _, k := range []string{"judgeName", "results", "groupScores", "score"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: no %s", c.name, k)
			}
		}
	}
	// Per-gate classifications: shadow's under_refusal is too high.
	_, m := do(t, h, "POST", "/judge?arm=shadow", "")
	rs := m["results"].([]any)
	r0, r1 := rs[0].(map[string]any), rs[1].(map[string]any)
	if r0["name"] != "precision_floor" || r0["classification"] != "Pass" || r1["classification"] != "High" || r1["id"] != "under_refusal_ceiling/shadow" {
		t.Errorf("results: %v", rs)
	}
	for _, k := range []string{"tags", "groups", "experimentMetadata", "controlMetadata", "resultMetadata", "classificationReason"} {
		if _, ok := r1[k]; !ok {
			t.Errorf("result has no %s: %v", k, r1)
		}
	}
	if r1["experimentMetadata"].(map[string]any)["value"] != 0.2 || r1["resultMetadata"].(map[string]any)["state"] != "firing" {
		t.Errorf("metadata: %v", r1)
	}
	// Low: a >= gate failing.
	src := newFake("canary")
	src.set("canary", "5m", "precision", prop(100, 1000))
	e2 := New([]config.Gate{gate("precision_floor", "precision", ">=", 0.8, 0)}, src)
	e2.Evaluate(t0)
	_, m = do(t, KayentaJudgeHandler(e2, func() time.Time { return t0 }), "POST", "/judge", "")
	if c := m["results"].([]any)[0].(map[string]any)["classification"]; c != "Low" {
		t.Errorf("classification %v, want Low", c)
	}
	for _, b := range []string{`{`, `[]`, `{"scoreThresholds":{"pass":"high"}}`, `{"metricSetPairList":[{"tags":{"arm":1}}]}`} {
		if rec, m := do(t, h, "POST", "/judge", b); rec.Code != 400 || m["error"] == nil {
			t.Errorf("body %s: %d %v", b, rec.Code, m)
		}
	}
}
