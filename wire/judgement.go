package wire

import (
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/shadoweval/shadoweval/vocab"
)

// labelList spells the label space for errors.
var labelList = strings.Join(vocab.Labels[:], ", ")

// Judgement is one validator's verdict on one answer (SPEC §2.4).
type Judgement struct {
	QID          string
	RequestID    string
	Arm          string
	Agent        string
	Label        string
	Reason       string
	Flags        map[string]bool // Python truthiness of each flag value
	HasAnswer    bool
	Answer       Answer
	RetrievedIDs []string
}

type judgementWire struct {
	QID          string                    `json:"qid"`
	RequestID    string                    `json:"request_id"`
	Arm          string                    `json:"arm"`
	Agent        string                    `json:"agent"`
	Label        *string                   `json:"label"`
	Reason       string                    `json:"reason"`
	Flags        map[string]jsontext.Value `json:"flags"`
	AnswerJSON   *answerWire               `json:"answer_json"`
	RetrievedIDs []string                  `json:"retrieved_ids"`
}

// DecodeJudgement decodes and validates one judgement event.
func DecodeJudgement(line []byte) (Judgement, error) {
	var w judgementWire
	if err := unmarshal(line, &w); err != nil {
		return Judgement{}, err
	}
	switch {
	case w.QID == "":
		return Judgement{}, fieldErr("qid", "required")
	case w.Agent != vocab.AgentScholar && w.Agent != vocab.AgentAuditor:
		return Judgement{}, fieldErr("agent", "want %q or %q, got %q", vocab.AgentScholar, vocab.AgentAuditor, w.Agent)
	case w.Label == nil:
		return Judgement{}, fieldErr("label", "required")
	}
	if _, ok := vocab.LabelIndex(*w.Label); !ok {
		return Judgement{}, fieldErr("label", "want one of %s, got %q", labelList, *w.Label)
	}
	j := Judgement{
		QID: w.QID, RequestID: w.RequestID, Arm: w.Arm, Agent: w.Agent,
		Label: *w.Label, Reason: w.Reason, RetrievedIDs: w.RetrievedIDs,
	}
	if len(w.Flags) > 0 {
		j.Flags = make(map[string]bool, len(w.Flags))
		for k, v := range w.Flags {
			j.Flags[k] = Truthy(v)
		}
	}
	if w.AnswerJSON != nil {
		a, err := decodeAnswer(w.AnswerJSON)
		if err != nil {
			return Judgement{}, err
		}
		j.HasAnswer, j.Answer = true, a
	}
	return j, nil
}
