package main

import (
	"log/slog"
	"math"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// sidecarGOGC is the GOGC of run and demo when the environment sets none.
// Nearly all of the sidecar's live heap is long-lived (windows, gold set);
// its garbage is the NATS client's copy of every message. At 400 that is
// collected a quarter as often as at Go's default 100: about 5–10 % less
// CPU per event at a fixed rate, for ~12 MiB more RSS under the default
// windows (BENCHMARKS.md).
const sidecarGOGC = 400

// tuneGC sets GOGC to sidecarGOGC unless the environment sets GOGC, and,
// unless it sets GOMEMLIMIT, a soft memory limit of 90 % of the cgroup's
// (a container's limit), so that the larger heap headroom never becomes an
// OOM kill: near the limit the collector runs as often as it must.
func tuneGC(log *slog.Logger) {
	gogc := "environment"
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(sidecarGOGC)
		gogc = "400"
	}
	limit, err := memlimit.Set(memlimit.WithRatio(0.9), memlimit.WithProvider(memlimit.FromCgroup), memlimit.WithLogger(slog.New(slog.DiscardHandler)))
	switch {
	case err != nil:
		log.Warn("garbage collector: reading the cgroup memory limit", "gogc", gogc, "err", err)
	case limit == math.MaxInt64:
		log.Info("garbage collector", "gogc", gogc, "memory_limit", "none")
	default:
		log.Info("garbage collector", "gogc", gogc, "memory_limit_bytes", limit)
	}
}
