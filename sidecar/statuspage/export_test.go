package statuspage

// Fixtures for the external tests (the browser tests live in package
// statuspage_test, as they also run the whole sidecar, which imports this
// package).

type FakeSource = fakeSource

var (
	NewFakeSource = newFakeSource
	FillHistory   = fillHistory
	// SimulatedAnalyses runs analyses over simulated traffic.
	SimulatedAnalyses = simulatedAnalyses
)

func NewFakeGates() GateSource { return newFakeGates() }
