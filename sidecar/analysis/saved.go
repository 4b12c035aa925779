package analysis

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/shadoweval/shadoweval/window"
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
	// Matched are the pairs of the two arms' events taken (SPEC §5.3).
	Matched json.RawMessage `json:"matched,omitempty"`
	History []Point         `json:"history,omitempty"`
	Step    int             `json:"step,omitempty"`
	Tick    int             `json:"tick,omitempty"`
	Run     []Bound         `json:"run,omitempty"`
	Period  int64           `json:"period,omitempty"`
	// Uncounted are the paired series whose visits the accumulators and
	// pairs leave out: none may be one a check of the analysis reads.
	Uncounted []string `json:"uncounted,omitempty"`
}

// What Save keeps.
type SaveMode int

const (
	// SaveSpec keeps the spec and the end only (JetStream mode).
	SaveSpec SaveMode = iota
	// SaveAll keeps the accumulators too.
	SaveAll
	// SaveClosedGroups keeps the accumulators without their open λ groups
	// (fewer than lambda.min_runs runs of a qid so far): one per qid seen,
	// they are the bulk of a checkpoint too large for its store.
	SaveClosedGroups
)

// Save returns the analysis for a checkpoint.
func (an *Analysis) Save(mode SaveMode) (Saved, error) {
	an.mu.Lock()
	defer an.mu.Unlock()
	s := Saved{Spec: an.spec, Ended: an.ended, EndReason: an.endReason}
	if mode == SaveSpec {
		return s, nil
	}
	marshal := func(cu *window.Cumulative) ([]byte, error) {
		if mode == SaveClosedGroups {
			return cu.MarshalWithoutOpenGroups()
		}
		return json.Marshal(cu)
	}
	var err error
	if s.Candidate, err = marshal(an.cand); err != nil {
		return Saved{}, fmt.Errorf("analysis %q: candidate: %w", an.spec.ID, err)
	}
	if s.Baseline, err = marshal(an.base); err != nil {
		return Saved{}, fmt.Errorf("analysis %q: baseline: %w", an.spec.ID, err)
	}
	if s.Matched, err = window.EncodeMatches(an.matched.Counts(), an.ks); err != nil {
		return Saved{}, fmt.Errorf("analysis %q: matched pairs: %w", an.spec.ID, err)
	}
	s.Events, s.History, s.Step, s.Tick = an.eventsLocked(), slices.Clone(an.history), an.step, an.tick
	s.Run, s.Period = slices.Clone(an.run), an.lastPeriod
	s.Uncounted = slices.Clone(an.uncounted)
	return s, nil
}

// readsUncounted is the error of accumulators that left out the visits of
// a series one of an's checks reads: its check set read other metrics
// when they were counted, and its variance would be missing them.
func (an *Analysis) readsUncounted(uncounted []string) error {
	for _, c := range an.checks {
		s, ok := window.Lookup(c.Metric)
		if !ok {
			continue
		}
		if name, ok := window.VisitSeries(an.ks, s); ok && slices.Contains(uncounted, name) {
			return fmt.Errorf("check %q reads the visits of %s, which these accumulators did not count (check set %q read no such metric when they were saved)", c.Name, name, an.spec.CheckSet)
		}
	}
	return nil
}

// load restores what Save wrote into a fresh analysis.
func (an *Analysis) load(s Saved) error {
	an.ended, an.endReason = s.Ended, s.EndReason
	if !s.Ended.IsZero() {
		an.endNs = s.Ended.UnixNano()
	}
	if len(s.Candidate) == 0 && len(s.Baseline) == 0 {
		return nil
	}
	if err := an.readsUncounted(s.Uncounted); err != nil {
		return err
	}
	// Counted on from here as the Manager counts, the accumulators keep
	// out what either left out.
	for _, name := range s.Uncounted {
		if !slices.Contains(an.uncounted, name) {
			an.uncounted = append(an.uncounted, name)
		}
	}
	if err := json.Unmarshal(s.Candidate, an.cand); err != nil {
		return fmt.Errorf("candidate: %w", err)
	}
	if err := json.Unmarshal(s.Baseline, an.base); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	an.cand.SetEvents(s.Events.Arm)
	an.base.SetEvents(s.Events.Baseline)
	if len(s.Matched) > 0 {
		m, err := window.DecodeMatches(s.Matched, an.ks)
		if err != nil {
			return err
		}
		an.matched.Restore(m)
	}
	an.history, an.tick = s.History, s.Tick
	an.step = max(s.Step, 1)
	if len(s.Run) == len(an.run) {
		copy(an.run, s.Run)
	}
	an.lastPeriod = s.Period
	return nil
}

// maxSavedSize bounds a decompressed checkpoint: a bucket is no place to
// trust for a decompression bomb.
const maxSavedSize = 256 << 20

// Encode writes s as a checkpoint record: gzipped JSON (a checkpoint with
// its accumulators is mostly sketch bins and λ groups, and compresses to
// about a third).
func (s Saved) Encode() ([]byte, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("analysis %q: %w", s.Spec.ID, err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodeSaved reads a checkpoint record that Encode wrote.
func DecodeSaved(data []byte) (Saved, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return Saved{}, fmt.Errorf("analysis checkpoint: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxSavedSize+1))
	if err != nil {
		return Saved{}, fmt.Errorf("analysis checkpoint: %w", err)
	}
	if len(raw) > maxSavedSize {
		return Saved{}, fmt.Errorf("analysis checkpoint: more than %d bytes decompressed", maxSavedSize)
	}
	var s Saved
	if err := json.Unmarshal(raw, &s); err != nil {
		return Saved{}, fmt.Errorf("analysis checkpoint: %w", err)
	}
	return s, nil
}
