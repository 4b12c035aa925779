package checks

import (
	"slices"
	"testing"
)

func TestTopK(t *testing.T) {
	ids := []string{"a", "b", "c", "d"}
	tests := []struct {
		ids  []string
		k    int
		want []string
	}{
		{ids, 0, []string{}},
		{ids, 1, []string{"a"}},
		{ids, 3, []string{"a", "b", "c"}},
		{ids, 4, ids},
		{ids, 10, ids},
		{ids, -1, []string{"a", "b", "c"}},
		{ids, -3, []string{"a"}},
		{ids, -4, []string{}},
		{ids, -5, []string{}},
		{nil, 5, []string{}},
		{nil, -1, []string{}},
	}
	for _, tt := range tests {
		if got := TopK(tt.ids, tt.k); !slices.Equal(got, tt.want) {
			t.Errorf("TopK(%q, %d) = %q, want %q", tt.ids, tt.k, got, tt.want)
		}
	}
}

func TestRecallStrict(t *testing.T) {
	ret := []string{"a", "b", "c", "d"}
	tests := []struct {
		name      string
		gold      []string
		retrieved []string
		k         int
		want      bool
	}{
		{"all gold in top k", []string{"a", "c"}, ret, 3, true},
		{"gold just past k", []string{"a", "d"}, ret, 3, false},
		{"k past the end", []string{"d"}, ret, 10, true},
		{"empty gold is vacuous", []string{}, ret, 1, true},
		{"nil gold is vacuous", nil, nil, 5, true},
		{"k zero", []string{"a"}, ret, 0, false},
		{"negative k drops the last", []string{"c"}, ret, -1, true},
		{"negative k drops d", []string{"d"}, ret, -1, false},
		{"negative k beyond length", []string{"a"}, ret, -4, false},
		{"duplicate gold ids", []string{"a", "a"}, ret, 1, true},
		{"nothing retrieved", []string{"a"}, nil, 5, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RecallStrict(tt.gold, tt.retrieved, tt.k); got != tt.want {
				t.Errorf("RecallStrict(%q, %q, %d) = %v, want %v", tt.gold, tt.retrieved, tt.k, got, tt.want)
			}
		})
	}
}

func TestPrecisionAndRecallAtK(t *testing.T) {
	ret := []string{"a", "b", "c", "d", "e"}
	tests := []struct {
		name      string
		gold      []string
		retrieved []string
		k         int
		wantP     float64
		wantR     float64
		wantOK    bool
	}{
		{"one of one at k=1", []string{"a"}, ret, 1, 1, 1, true},
		{"one of three at k=3", []string{"b", "x"}, ret, 3, 1.0 / 3, 0.5, true},
		{"two gold in top 5", []string{"a", "e", "z", "y"}, ret, 5, 0.4, 0.5, true},
		{"k past the end", []string{"e"}, ret, 10, 0.2, 1, true},
		{"k zero", []string{"a"}, ret, 0, 0, 0, true},
		{"nothing retrieved", []string{"a"}, nil, 5, 0, 0, true},
		{"empty gold", []string{}, ret, 3, 0, 0, false},
		{"nil gold", nil, ret, 3, 0, 0, false},
		{"negative k", []string{"a", "e"}, ret, -1, 0.25, 0.5, true},
		{"negative k beyond length", []string{"a"}, ret, -9, 0, 0, true},
		{"duplicate gold counted once", []string{"a", "a", "b"}, ret, 1, 1, 0.5, true},
		{"duplicate retrieved counted once", []string{"a"}, []string{"a", "a", "b"}, 3, 0.5, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PrecisionAtK(tt.gold, tt.retrieved, tt.k); got != tt.wantP {
				t.Errorf("PrecisionAtK(%q, %q, %d) = %v, want %v", tt.gold, tt.retrieved, tt.k, got, tt.wantP)
			}
			got, ok := RecallAtK(tt.gold, tt.retrieved, tt.k)
			if got != tt.wantR || ok != tt.wantOK {
				t.Errorf("RecallAtK(%q, %q, %d) = %v, %v, want %v, %v", tt.gold, tt.retrieved, tt.k, got, ok, tt.wantR, tt.wantOK)
			}
		})
	}
}
