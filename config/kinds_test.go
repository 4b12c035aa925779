package config

import (
	"slices"
	"testing"
)

// A gate's and a check's kind follow from the keys they set, and every
// kind has its validation entry.
func TestKinds(t *testing.T) {
	if got := GateKinds(); !slices.Equal(got, []string{GateCompareTo, GateThreshold}) {
		t.Errorf("GateKinds() = %v", got)
	}
	if got := CheckKinds(); !slices.Equal(got, []string{CheckAbsolute, CheckComparison}) {
		t.Errorf("CheckKinds() = %v", got)
	}
	for _, g := range DefaultGates() {
		if want := map[bool]string{false: GateThreshold, true: GateCompareTo}[g.CompareTo != ""]; g.Kind() != want {
			t.Errorf("gate %s: kind %s, want %s", g.Name, g.Kind(), want)
		}
	}
	for name, set := range DefaultCheckSets() {
		for _, c := range set {
			if want := map[bool]string{false: CheckComparison, true: CheckAbsolute}[c.Op != ""]; c.Kind() != want {
				t.Errorf("%s %s: kind %s, want %s", name, c.Name, c.Kind(), want)
			}
		}
	}
}
