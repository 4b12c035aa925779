//go:build linux

package window

import "syscall"

// threadCPU is the CPU time of the calling OS thread, in ns; callers lock
// the goroutine to its thread. On a shared machine it keeps the time other
// processes take out of the figure.
func threadCPU() (int64, bool) {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
