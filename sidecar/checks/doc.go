// Package checks holds the per-event checks of SPEC §3 (refusal,
// containment, citation hit, retrieval, coverage, citation accuracy,
// anchor proximity, ΔS and λ), triage (seed 004) and arbitration (seed
// 003). Every check is a pure function over decoded values: Evaluate
// turns one trace event and its gold item into a window.Observation.
// The package knows nothing of NATS, messages, metrics or tracing, so the
// live sidecar and the offline scorers run the same code.
package checks
