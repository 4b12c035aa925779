// Package vocab declares the words that stream, sidecar and window share:
// the default and overflow arm names, the judgement and triage labels, the
// λ states and the outcomes of an event. Each is declared here once, so
// that a label on the wire, in a window and in a metric cannot drift
// apart. It imports nothing from the module: every package may depend on
// it.
package vocab
