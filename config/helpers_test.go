package config

import "testing"

// parseErrorCase is a configuration that Parse must refuse with exactly
// the error want.
type parseErrorCase struct{ name, yaml, want string }

// checkParseErrors runs each case as a subtest: Parse of its yaml, as
// config.yaml, fails with exactly want and returns no configuration.
func checkParseErrors(t *testing.T, cases []parseErrorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml), "config.yaml")
			if err == nil {
				t.Fatalf("Parse succeeded, want %q; input:\n%s", tc.want, tc.yaml)
			}
			if c != nil {
				t.Error("Parse returned a config with its error")
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n%s\nwant:\n%s\ninput:\n%s", err, tc.want, tc.yaml)
			}
		})
	}
}

// inCodeCase is a change to Default(), made in code, that Validate must
// refuse with exactly the error want.
type inCodeCase struct {
	name   string
	change func(*Config)
	want   string
}

// checkInCode runs each case as a subtest.
func checkInCode(t *testing.T, cases []inCodeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.change(&c)
			if err := c.Validate(); err == nil || err.Error() != tc.want {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}
