package wire

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

func TestTruthy(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"", false}, {"null", false}, {"false", false}, {"true", true},
		{`""`, false}, {`" "`, true}, {`"false"`, true}, {`"\n"`, true},
		{"0", false}, {"-0", false}, {"0.0", false}, {"-0.0", false}, {"0e5", false}, {"0E-5", false},
		{"1", true}, {"-1", true}, {"0.1", true}, {"1e-300", true}, {"4.9e-324", true},
		{"2e-324", false}, {"1e-400", false}, {"1e400", true}, {"-1e400", true},
		{"10", true}, {"100000000000000000000000000000000000000000", true},
		{"[]", false}, {"[ \n]", false}, {"[0]", true}, {"[[]]", true}, {"[null]", true},
		{"{}", false}, {"{\t}", false}, {`{"a":0}`, true},
		{" true ", true}, {" [] ", false},
	}
	for _, tt := range tests {
		if got := Truthy(jsontext.Value(tt.v)); got != tt.want {
			t.Errorf("Truthy(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}
