package httpjson

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestWrite: answers are byte for byte what encoding/json writes indented
// by two spaces without HTML escaping, for the shapes the handlers answer
// with; a value JSON cannot hold answers 500 with the reason.
func TestWrite(t *testing.T) {
	type check struct {
		Name     string    `json:"name"`
		Estimate float64   `json:"estimate"`
		Interval []float64 `json:"interval,omitempty"`
		Pairs    *int64    `json:"pairs,omitempty"`
		Note     string    `json:"note,omitempty"`
	}
	pairs := int64(12)
	for name, v := range map[string]any{
		"struct":    check{Name: "precision", Estimate: -0.0123456789, Interval: []float64{-0.05, 0.02}, Pairs: &pairs},
		"empty":     check{},
		"list":      []check{{Name: "a"}, {Name: "b", Estimate: 1e-7}},
		"error":     map[string]string{"error": "a <b> & \"c\" >= d\n"},
		"nil slice": map[string]any{"known_arms": []string(nil), "n": 1.5e-7, "big": 1e21},
		"time":      map[string]time.Time{"since": time.Date(2026, 11, 28, 12, 0, 0, 5, time.UTC)},
		"nil":       nil,
	} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		Write(rec, http.StatusTeapot, v)
		if rec.Code != http.StatusTeapot || rec.Body.String() != want.String() || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q\n%s\nwant\n%s", name, rec.Code, rec.Header().Get("Content-Type"), rec.Body, want.String())
		}
	}
	rec := httptest.NewRecorder()
	Write(rec, http.StatusOK, map[string]float64{"estimate": math.NaN()})
	var body map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &body); rec.Code != http.StatusInternalServerError || err != nil || !strings.Contains(body["error"], "NaN") {
		t.Errorf("NaN: %d %q (%v)", rec.Code, rec.Body, err)
	}
}
