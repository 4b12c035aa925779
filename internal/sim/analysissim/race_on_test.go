//go:build race

package analysissim

// raceEnabled: the race detector slows the simulation tenfold; the quick
// runs are cut further under it.
const raceEnabled = true
