package analysis

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Saved is an analysis as checkpointed in the analysis.kv_bucket KV bucket.
// In JetStream mode only the spec and the end are needed: a restart
// replays the stream from the start of the oldest running analysis, so the
// accumulators come back exactly. With core NATS the accumulators are saved
// too and the analysis resumes from them.
type Saved struct {
	Spec      Spec      `json:"spec"`
	Ended     time.Time `json:"ended,omitzero"`
	EndReason string    `json:"end_reason,omitempty"`
	// The rest is present only in a checkpoint with accumulators.
	Events    Samples         `json:"events"`
	Candidate json.RawMessage `json:"candidate,omitempty"`
	Baseline  json.RawMessage `json:"baseline,omitempty"`
	History   []Point         `json:"history,omitempty"`
	Step      int             `json:"step,omitempty"`
	Tick      int             `json:"tick,omitempty"`
	Run       []Bound         `json:"run,omitempty"`
	Minute    int64           `json:"minute,omitempty"`
}

// Save returns the analysis for a checkpoint; with accumulators false only
// the spec and its end.
func (an *Analysis) Save(accumulators bool) (Saved, error) {
	an.mu.Lock()
	defer an.mu.Unlock()
	s := Saved{Spec: an.spec, Ended: an.ended, EndReason: an.endReason}
	if !accumulators {
		return s, nil
	}
	var err error
	if s.Candidate, err = json.Marshal(an.cand); err != nil {
		return Saved{}, fmt.Errorf("analysis %q: candidate: %w", an.spec.ID, err)
	}
	if s.Baseline, err = json.Marshal(an.base); err != nil {
		return Saved{}, fmt.Errorf("analysis %q: baseline: %w", an.spec.ID, err)
	}
	s.Events, s.History, s.Step, s.Tick = an.events, slices.Clone(an.history), an.step, an.tick
	s.Run, s.Minute = slices.Clone(an.run), an.lastMinute
	return s, nil
}

// load restores what Save wrote into a fresh analysis.
func (an *Analysis) load(s Saved) error {
	an.ended, an.endReason = s.Ended, s.EndReason
	if len(s.Candidate) == 0 && len(s.Baseline) == 0 {
		return nil
	}
	if err := json.Unmarshal(s.Candidate, an.cand); err != nil {
		return fmt.Errorf("candidate: %w", err)
	}
	if err := json.Unmarshal(s.Baseline, an.base); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	an.events, an.history, an.tick = s.Events, s.History, s.Tick
	an.step = max(s.Step, 1)
	if len(s.Run) == len(an.run) {
		copy(an.run, s.Run)
	}
	an.lastMinute = s.Minute
	return nil
}
