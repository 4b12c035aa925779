package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/bad/*.err from the current messages")

// TestBadGolden loads every testdata/bad/*.yaml and compares the error text
// with its sibling .err file, byte for byte.
func TestBadGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/bad/*.yaml")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, err := Load(f)
			if err == nil {
				t.Fatalf("Load(%s) succeeded, want an error; config:\n%s", f, c)
			}
			if c != nil {
				t.Errorf("Load(%s) returned a config with its error", f)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(f, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("Load(%s) error:\n%s\nwant (%s):\n%s", f, got, golden, want)
			}
			for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
				if !strings.HasPrefix(line, f+":") {
					t.Errorf("message does not start with %q: %s", f+":", line)
				}
			}
		})
	}
	// Every .err has its .yaml.
	errs, _ := filepath.Glob(filepath.Join("testdata", "bad", "*.err"))
	for _, e := range errs {
		if _, err := os.Stat(strings.TrimSuffix(e, ".err") + ".yaml"); err != nil {
			t.Errorf("%s has no .yaml", e)
		}
	}
}

// TestGoodFiles loads every testdata/good/*.yaml without error.
func TestGoodFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "good", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("only %d testdata/good files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			c, err := Load(f)
			if err != nil {
				t.Fatalf("Load(%s): %v", f, err)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate after Load: %v", err)
			}
			if len(c.Gates) == 0 {
				t.Error("no gates after Load")
			}
		})
	}
}
