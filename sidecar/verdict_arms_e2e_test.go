package sidecar_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/config"
)

// TestVerdictKnownArms: a verdict request, a POST of an analysis, a
// Flagger webhook and a Kayenta judge request start an analysis only for
// an arm the sidecar knows (SPEC §6): live, shadow, canary, an arm the
// configuration names, or one an event named. Any other answers 404 and
// starts nothing.
func TestVerdictKnownArms(t *testing.T) {
	t.Parallel()
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl", configure: func(c *config.Config) {
		c.Gates = append(c.Gates[:0:0], config.Default().Gates...)
		c.Gates[0].Arms = []string{"blue"}
	}})
	ev := goodTrace("A1")
	ev.Arm = "green"
	h.PublishJSON("rag.trace.live", ev)
	h.waitEvents("green", map[string]int64{"scored": 1})

	for _, c := range []struct {
		query string
		want  int
	}{
		{"arm=grene", http.StatusNotFound},
		{"arm=canary&baseline=bleu", http.StatusNotFound},
		{"arm=green", http.StatusOK},               // seen in an event
		{"arm=blue&baseline=green", http.StatusOK}, // configured
		{"arm=shadow&analysis=s1", http.StatusOK},
	} {
		if code, out := h.Get("/api/v1/verdict?" + c.query); code != c.want {
			t.Errorf("GET /api/v1/verdict?%s: %d %s, want %d", c.query, code, out, c.want)
		}
	}
	for _, c := range []struct{ path, body string }{
		{"/api/v1/analyses", `{"id":"p1","arm":"canry"}`},
		{"/api/v1/analyses", `{"id":"p2","baseline":"lvie"}`},
		{"/api/v1/flagger/rollout", `{"name":"podinfo","namespace":"test","checksum":"abc","metadata":{"arm":"canry"}}`},
		{"/api/v1/flagger/confirm-rollout", `{"name":"podinfo","namespace":"test","checksum":"abc","metadata":{"arm":"shdow"}}`},
		{"/judge", `{"metricSetPairList":[{"name":"m","id":"1","tags":{"arm":"canry","analysis":"k1"}}]}`},
	} {
		if code, out := h.PostJSON(c.path, c.body); code != http.StatusNotFound || !strings.Contains(string(out), "unknown arm") {
			t.Errorf("POST %s %s: %d %s, want 404 naming the unknown arm", c.path, c.body, code, out)
		}
	}
	var list struct {
		Analyses []struct {
			Analysis string `json:"analysis"`
		} `json:"analyses"`
	}
	h.GetJSON("/api/v1/analyses", http.StatusOK, &list)
	var ids []string
	for _, a := range list.Analyses {
		ids = append(ids, a.Analysis)
	}
	if len(ids) != 3 {
		t.Errorf("analyses %v, want the three answered 200 (green, blue, s1)", ids)
	}
}
