package config

import (
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/shadoweval/shadoweval/testenv"
)

// FuzzParse: Parse never panics; a configuration it accepts validates, and
// its printed (redacted) form reads back to the same configuration.
func FuzzParse(f *testing.F) {
	testenv.AddSeedFiles(f, "testdata/good/*.yaml", "testdata/bad/*.yaml")
	f.Add(DefaultYAML())
	// Check sets: a map decoded by the walker, with aliases and merge keys.
	f.Add([]byte("analysis:\n  checks:\n    <<: {a: &s [{metric: chr, tolerance: 0.1}]}\n    b: *s\n    canary:\n    \"\": []\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.yaml")
		if err != nil {
			if c != nil {
				t.Fatal("Parse returned a config with its error")
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse accepted a config Validate refuses: %v", err)
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		back, err := Parse(out, "fuzz-out.yaml")
		if err != nil {
			t.Fatalf("reading back the printed config: %v\n%s", err, out)
		}
		if got, want := plain(back), plain(c.Redacted()); !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip:\n%s\nwant:\n%s", got, want)
		}
	})
}
