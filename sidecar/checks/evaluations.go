package checks

import "github.com/shadoweval/shadoweval/window"

// Evaluation is the result of one per-event check on an observation, as a
// span reports it (a gen_ai.evaluation.result event): the check's name, its
// score, and its label and explanation when it has them.
type Evaluation struct {
	Name        string
	Score       float64
	Label       string
	Explanation string
}

// evaluations are the per-event checks a span reports by their own names
// (refusal, containment, citation hit, anchor distance, cited ΔS); the
// per-event proportions of window's registry report themselves. Each adds
// itself from the file of its check (in its init): it says what o gives
// it, false when o gives it nothing.
var evaluations []func(o *window.Observation) (Evaluation, bool)

// Evaluations calls each with the result of every per-event check that o
// answers, in a fixed order.
func Evaluations(o *window.Observation, each func(Evaluation)) {
	for _, check := range evaluations {
		if ev, ok := check(o); ok {
			each(ev)
		}
	}
}

// passFail is a check's result that is pass or fail.
func passFail(name string, ok bool) Evaluation {
	if ok {
		return Evaluation{Name: name, Score: 1, Label: "pass"}
	}
	return Evaluation{Name: name, Label: "fail"}
}

// explanations say why an observation fails a metric of the registry,
// where that is worth a word; a check adds its metric's from its file.
var explanations = map[string]func(*window.Observation) string{}

// Explain says why o fails metric, "" when there is nothing to say.
func Explain(metric string, o *window.Observation) string {
	if explain := explanations[metric]; explain != nil {
		return explain(o)
	}
	return ""
}
