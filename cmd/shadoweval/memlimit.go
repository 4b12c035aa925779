package main

import (
	"log/slog"
	"math"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// setMemoryLimit sets a soft memory limit of 90 % of the cgroup's (a
// container's limit) unless the environment sets GOMEMLIMIT: near the
// limit the collector then runs as often as it must instead of the process
// being OOM-killed. The collector's pace is otherwise Go's own (GOGC).
func setMemoryLimit(log *slog.Logger) {
	limit, err := memlimit.Set(memlimit.WithRatio(0.9), memlimit.WithProvider(memlimit.FromCgroup), memlimit.WithLogger(slog.New(slog.DiscardHandler)))
	switch {
	case err != nil:
		log.Warn("memory limit: reading the cgroup's", "err", err)
	case limit == math.MaxInt64:
		log.Debug("memory limit: none")
	default:
		log.Info("memory limit", "GOMEMLIMIT", limit)
	}
}
