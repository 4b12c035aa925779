package checks

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/shadoweval/shadoweval/vocab"
)

func flags(kv ...string) map[string]jsontext.Value {
	m := map[string]jsontext.Value{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = jsontext.Value(kv[i+1])
	}
	return m
}

func TestArbitrate(t *testing.T) {
	tests := []struct {
		name      string
		in        ArbitrationInput
		final     string
		why       string
		wantValid bool
	}{
		{"auditor ok scholar valid", ArbitrationInput{Scholar: "VALID", Auditor: "VALID"}, "VALID", "auditor_ok", true},
		{"auditor ok scholar refused", ArbitrationInput{Scholar: "NOT_IN_CONTEXT", Auditor: "VALID"}, "VALID", "auditor_ok", true},
		{"scholar rejects", ArbitrationInput{Scholar: "REJECT", Auditor: "VALID"}, "REJECT", "incoherent_pair", false},
		{"scholar abstains", ArbitrationInput{Scholar: "ABSTAIN", Auditor: "VALID"}, "REJECT", "incoherent_pair", false},
		{"scholar label outside the space", ArbitrationInput{Scholar: "valid", Auditor: "VALID"}, "REJECT", "incoherent_pair", false},
		{"auditor refuses", ArbitrationInput{Scholar: "VALID", Auditor: "NOT_IN_CONTEXT"}, "REJECT", "auditor_veto", false},
		{"auditor abstains", ArbitrationInput{Scholar: "VALID", Auditor: "ABSTAIN"}, "REJECT", "auditor_veto", false},
		{"auditor lower-case valid", ArbitrationInput{Scholar: "VALID", Auditor: "valid"}, "REJECT", "auditor_veto", false},
		{"auditor VALID with a trailing space", ArbitrationInput{Scholar: "VALID", Auditor: "VALID "}, "REJECT", "auditor_veto", false},
		{"auditor fullwidth VALID", ArbitrationInput{Scholar: "VALID", Auditor: "ＶＡＬＩＤ"}, "REJECT", "auditor_veto", false},
		{"empty labels", ArbitrationInput{}, "REJECT", "auditor_veto", false},
		{"provenance true", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Flags: flags("provenance_violation", "true")}, "REJECT", "hard_flag", false},
		{"constraints truthy string", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Flags: flags("constraints_mismatch", `"no"`)}, "REJECT", "hard_flag", false},
		{"string zero is truthy", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Flags: flags("constraints_mismatch", `"0"`)}, "REJECT", "hard_flag", false},
		{"escaped NUL string is truthy", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Flags: flags("constraints_mismatch", `"\u0000"`)}, "REJECT", "hard_flag", false},
		{"number flag", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Flags: flags("provenance_violation", "2")}, "REJECT", "hard_flag", false},
		{"negative number flag", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Flags: flags("provenance_violation", "-0.5")}, "REJECT", "hard_flag", false},
		{"falsy flags", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Flags: flags("provenance_violation", "false", "constraints_mismatch", "null")}, "VALID", "auditor_ok", true},
		{"zero flags", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Flags: flags("provenance_violation", "0", "constraints_mismatch", "-0.0e10")}, "VALID", "auditor_ok", true},
		{"empty containers", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Flags: flags("provenance_violation", "[ ]", "constraints_mismatch", "{\n}")}, "VALID", "auditor_ok", true},
		{"underflow is falsy", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Flags: flags("provenance_violation", "1e-400")}, "VALID", "auditor_ok", true},
		{"overflow is truthy", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Flags: flags("provenance_violation", "-1e400")}, "REJECT", "hard_flag", false},
		{"other flags are ignored", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Flags: flags("Provenance_Violation", "true", "template_drift", "true")}, "VALID", "auditor_ok", true},
		{"hard flag wins over everything", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Flags: flags("constraints_mismatch", "[0]"), Citations: []string{"x"}}, "REJECT", "hard_flag", false},
		{"citations in scope", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Citations: []string{"p1#2", "p1#2"}, RetrievedIDs: []string{"p1#1", "p1#2"}}, "VALID", "auditor_ok", true},
		{"citation out of scope", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Citations: []string{"p1#2", "p9"}, RetrievedIDs: []string{"p1#2"}}, "REJECT", "citation_out_of_scope", false},
		{"citations with nothing retrieved", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Citations: []string{"p1"}}, "REJECT", "citation_out_of_scope", false},
		{"scope is exact: NFC vs NFD", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Citations: []string{"p\u00e9"}, RetrievedIDs: []string{"pe\u0301"}}, "REJECT", "citation_out_of_scope", false},
		{"scope is case-sensitive", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Citations: []string{"P1"}, RetrievedIDs: []string{"p1"}}, "REJECT", "citation_out_of_scope", false},
		{"empty citation list", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Citations: []string{}}, "VALID", "auditor_ok", true},
		{"scope checked before the auditor veto", ArbitrationInput{Scholar: "VALID", Auditor: "REJECT", Citations: []string{"x"}}, "REJECT", "citation_out_of_scope", false},
		{"empty-string citation", ArbitrationInput{Scholar: "VALID", Auditor: "VALID", Citations: []string{""}, RetrievedIDs: []string{""}}, "VALID", "auditor_ok", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			final, why := Arbitrate(tt.in)
			if final != tt.final || why != tt.why {
				t.Errorf("Arbitrate = (%q, %q), want (%q, %q)", final, why, tt.final, tt.why)
			}
			if (final == vocab.LabelValid) != tt.wantValid {
				t.Errorf("final %q", final)
			}
		})
	}
}
