package vocab

import "testing"

func TestLabelIndex(t *testing.T) {
	for i, l := range Labels {
		if j, ok := LabelIndex(l); !ok || j != i {
			t.Errorf("LabelIndex(%q) = %d, %v", l, j, ok)
		}
	}
	for _, l := range []string{"", "valid", "VALID ", "ABSTAIN\x00", "REJECTED"} {
		if _, ok := LabelIndex(l); ok {
			t.Errorf("LabelIndex(%q) accepted", l)
		}
	}
}

func TestTriageIndex(t *testing.T) {
	for i, l := range TriageLabels {
		if j := TriageIndex(l); j != i {
			t.Errorf("TriageIndex(%q) = %d, want %d", l, j, i)
		}
	}
	for _, l := range []string{"", "OK", "drift", "refusal_ok "} {
		if j := TriageIndex(l); j != -1 {
			t.Errorf("TriageIndex(%q) = %d, want -1", l, j)
		}
	}
}

func TestLambdaStateString(t *testing.T) {
	for _, tt := range []struct {
		l    LambdaState
		want string
	}{
		{LambdaNone, ""},
		{LambdaConvergent, "convergent"},
		{LambdaDivergent, "divergent"},
		{LambdaRecursive, "recursive"},
		{LambdaChaotic, "chaotic"},
		{LambdaState(42), "LambdaState(42)"},
	} {
		if got := tt.l.String(); got != tt.want {
			t.Errorf("LambdaState(%d).String() = %q, want %q", int(tt.l), got, tt.want)
		}
	}
}

// Every state reads back from its symbol and from its word.
func TestLambdaStateOf(t *testing.T) {
	for l := LambdaNone; int(l) < NumLambdaStates; l++ {
		for _, s := range []string{l.Symbol(), l.String()} {
			if got, ok := LambdaStateOf(s); !ok || got != l {
				t.Errorf("LambdaStateOf(%q) = %v, %v, want %v", s, got, ok, l)
			}
		}
	}
	for _, s := range []string{" →", "Convergent", "x", "->", "none"} {
		if _, ok := LambdaStateOf(s); ok {
			t.Errorf("LambdaStateOf(%q) accepted", s)
		}
	}
	if got := LambdaState(42).Symbol(); got != "" {
		t.Errorf("LambdaState(42).Symbol() = %q", got)
	}
}

func TestOutcomeString(t *testing.T) {
	for o := Scored; int(o) < NumOutcomes; o++ {
		if o.String() != Outcomes[o] || o.String() == "" {
			t.Errorf("Outcome(%d).String() = %q", int(o), o.String())
		}
	}
}
