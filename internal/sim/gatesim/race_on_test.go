//go:build race

package gatesim

// raceEnabled: the race detector slows the simulation tenfold; the quick
// run is cut further under it.
const raceEnabled = true
