//go:build !race

package analysissim

const raceEnabled = false
