package vocab

// Triage labels of seed 004 (SPEC §3 "Triage label").
const (
	TriageOK              = "ok"
	TriageRetrievalDrift  = "retrieval_drift"
	TriageGenerationDrift = "generation_drift"
	TriageRefusalOK       = "refusal_ok"
	TriageRefusalSuspect  = "refusal_suspect"
)

// TriageLabels lists the triage labels in the order the windows index
// them (window.Observation.Triage) and the metrics list them.
var TriageLabels = [...]string{TriageOK, TriageRetrievalDrift, TriageGenerationDrift, TriageRefusalOK, TriageRefusalSuspect}

// TriageIndex is the position of label in TriageLabels, -1 when it is
// none of them.
func TriageIndex(label string) int {
	for i, l := range TriageLabels {
		if l == label {
			return i
		}
	}
	return -1
}
