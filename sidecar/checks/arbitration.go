package checks

import (
	"github.com/go-json-experiment/json/jsontext"
	"github.com/shadoweval/shadoweval/wire"

	"github.com/shadoweval/shadoweval/vocab"
)

// Reasons returned by Arbitrate, as written in the "why" column of the
// reference disagreements TSV.
const (
	WhyHardFlag           = "hard_flag"
	WhyCitationOutOfScope = "citation_out_of_scope"
	WhyAuditorVeto        = "auditor_veto"
	WhyAuditorOK          = "auditor_ok"
	WhyIncoherentPair     = "incoherent_pair"
)

// Hard red flags read by Arbitrate from the pair's "flags" object.
const (
	FlagProvenanceViolation = "provenance_violation"
	FlagConstraintsMismatch = "constraints_mismatch"
)

// ArbitrationInput is one Scholar/Auditor pair as seen by the conflict
// policy of seed 003.
type ArbitrationInput struct {
	Scholar string // the Scholar's label
	Auditor string // the Auditor's label
	// Flags is the pair's "flags" object as sent (nil when absent). Only
	// FlagProvenanceViolation and FlagConstraintsMismatch are read, with
	// Python truthiness (see Truthy).
	Flags map[string]jsontext.Value
	// Citations is answer_json.citations and RetrievedIDs the ids the
	// agents saw; nil and empty both mean none.
	Citations    []string
	RetrievedIDs []string
}

// Arbitrate is final_arbitration of seed 003, the deterministic conflict
// policy, evaluated in the reference order:
//
//  1. a truthy provenance_violation or constraints_mismatch flag: REJECT, hard_flag;
//  2. citations not a subset of the retrieved ids: REJECT, citation_out_of_scope;
//  3. the Auditor's label is not VALID: REJECT, auditor_veto;
//  4. the Scholar's label is VALID or NOT_IN_CONTEXT: VALID, auditor_ok;
//  5. otherwise: REJECT, incoherent_pair.
//
// The reference only arbitrates disagreeing pairs, but the policy is defined
// for any pair.
func Arbitrate(in ArbitrationInput) (final, why string) {
	if HardFlag(in.Flags) {
		return vocab.LabelReject, WhyHardFlag
	}
	if len(in.Citations) > 0 {
		retrieved := make(map[string]struct{}, len(in.RetrievedIDs))
		for _, id := range in.RetrievedIDs {
			retrieved[id] = struct{}{}
		}
		for _, c := range in.Citations {
			if _, ok := retrieved[c]; !ok {
				return vocab.LabelReject, WhyCitationOutOfScope
			}
		}
	}
	if in.Auditor != vocab.LabelValid {
		return vocab.LabelReject, WhyAuditorVeto
	}
	if in.Scholar == vocab.LabelValid || in.Scholar == vocab.LabelNotInContext {
		return vocab.LabelValid, WhyAuditorOK
	}
	return vocab.LabelReject, WhyIncoherentPair
}

// HardFlag reports whether provenance_violation or constraints_mismatch is
// truthy in flags.
func HardFlag(flags map[string]jsontext.Value) bool {
	return wire.Truthy(flags[FlagProvenanceViolation]) || wire.Truthy(flags[FlagConstraintsMismatch])
}
