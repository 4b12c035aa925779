package config

import (
	"slices"
	"testing"
)

func TestDidYouMean(t *testing.T) {
	metrics := []string{"precision", "chr", "recall_at_5", "delta_s_p90", "delta_s_median", "coverage"}
	for _, c := range []struct {
		name       string
		candidates []string
		want       string
	}{
		{"precison", metrics, `; did you mean "precision"?`},
		{"presicion", metrics, `; did you mean "precision"?`}, // a transposition
		{"delta_s_p09", metrics, `; did you mean "delta_s_p90"?`},
		{"cvoerage", metrics, `; did you mean "coverage"?`},
		{"chrr", metrics, `; did you mean "chr"?`},
		{"latency", metrics, ""},
		{"x", metrics, ""},
		{"tresholds", keysAt("gates[0]"), `; did you mean "threshold"?`},
		{"urll", keysAt("nats"), `; did you mean "url"?`},
	} {
		if got := didYouMean(c.name, c.candidates); got != c.want {
			t.Errorf("didYouMean(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestKeysAt(t *testing.T) {
	for path, want := range map[string]string{
		"":                          "nats",
		"nats.tls":                  "ca_file",
		"gates[0]":                  "compare_to",
		"analysis.checks.canary[1]": "tolerance",
		"windows[0]":                "resolution",
		"cluster":                   "partitions",
	} {
		if keys := keysAt(path); !slices.Contains(keys, want) {
			t.Errorf("keysAt(%q) = %v, want it to hold %q", path, keys, want)
		}
	}
	for _, path := range []string{"k", "nats.url", "nosuch", "gates"} {
		if keys := keysAt(path); keys != nil {
			t.Errorf("keysAt(%q) = %v, want nil", path, keys)
		}
	}
}
