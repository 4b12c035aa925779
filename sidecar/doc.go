// Package sidecar is the running sidecar: it takes trace, retrieval,
// answer and judgement messages from NATS, decodes them, joins each event
// to its gold item by qid and has package checks score it, then feeds the
// windows, the alert gates and the canary analyses, and serves the HTTP
// API and the Prometheus metrics. The message goes no further than this
// package: the checks see decoded values only (see ingest.go).
package sidecar
