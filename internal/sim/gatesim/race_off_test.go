//go:build !race

package gatesim

const raceEnabled = false
