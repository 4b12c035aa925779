package main

import (
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// gcHeadroom is the least heap the collector lets the sidecar allocate
// between two cycles when GOGC is not set. The NATS client allocates about
// 450 bytes per message and the live heap is a few MiB, so with Go's GOGC
// of 100 alone the collector runs ~50 times a second at 300k msgs/s, each
// cycle marking the whole live heap and stopping the world twice; 32 MiB
// cuts that about tenfold (BENCHMARKS.md, eighth session). It is a floor,
// not a multiple: a large live heap (a big gold set) keeps GOGC's 100 %,
// so the extra memory is at most this much.
const gcHeadroom = 32 << 20

// setGC sets the collector's limit and headroom for a long-running
// command: setMemoryLimit and keepHeadroom.
func setGC(log *slog.Logger) {
	setMemoryLimit(log)
	if v, ok := os.LookupEnv("GOGC"); ok {
		log.Info("garbage collector: GOGC from the environment, no headroom floor", "GOGC", v)
		return
	}
	keepHeadroom(gcHeadroom, 100)
	log.Debug("garbage collector: headroom floor", "bytes", gcHeadroom)
}

// setMemoryLimit sets a soft memory limit of 90 % of the cgroup's (a
// container's limit) unless the environment sets GOMEMLIMIT: near the
// limit the collector then runs as often as it must instead of the process
// being OOM-killed. The limit also bounds the headroom floor.
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

// headroomTuner sets GOGC after every collection so that the next one
// starts once the heap has grown by at least headroom bytes past the live
// heap, and never later than basePercent would: GOGC is
// max(basePercent, 100 × headroom / live). Go has no minimum heap
// setting; this is the usual way to get one without a ballast (which
// would show in every heap metric).
type headroomTuner struct {
	headroom    uint64
	basePercent int
	live        []metrics.Sample
	percent     atomic.Int64 // the GOGC last set
	stopped     atomic.Bool
	cycles      atomic.Int64 // collections seen (tests)
}

// activeTuner is the process's headroomTuner: GOGC is process-wide, so a
// new one stops the one before.
var activeTuner atomic.Pointer[headroomTuner]

// keepHeadroom starts a headroomTuner, in place of any running; stop ends
// it and restores basePercent.
func keepHeadroom(headroom uint64, basePercent int) (t *headroomTuner, stop func()) {
	t = &headroomTuner{headroom: headroom, basePercent: basePercent,
		live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	if old := activeTuner.Swap(t); old != nil {
		old.stopped.Store(true)
	}
	t.tune()
	t.arm()
	return t, func() {
		t.stopped.Store(true)
		if activeTuner.CompareAndSwap(t, nil) {
			debug.SetGCPercent(basePercent)
		}
	}
}

// arm registers a cleanup on a fresh object nothing refers to: it runs
// after the next collection has found it unreachable, and re-arms.
func (t *headroomTuner) arm() {
	// 32 bytes: not the tiny allocator's, whose blocks are shared and
	// freed together.
	runtime.AddCleanup(new([4]uint64), func(t *headroomTuner) {
		if t.stopped.Load() {
			return
		}
		t.cycles.Add(1)
		t.tune()
		t.arm()
	}, t)
}

// tune sets GOGC for the live heap the last collection marked.
func (t *headroomTuner) tune() {
	metrics.Read(t.live)
	if t.live[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	p := headroomPercent(t.live[0].Value.Uint64(), t.headroom, t.basePercent)
	// Within 5 % of the GOGC set: left alone, so that the live heap's
	// small moves do not reset it every cycle.
	if cur := t.percent.Load(); cur == 0 || (int64(p)-cur)*20 > cur || (cur-int64(p))*20 > cur {
		t.percent.Store(int64(p))
		debug.SetGCPercent(p)
	}
}

// heapMinimum is the runtime's least heap goal at GOGC=100, which it
// scales by GOGC/100 (runtime.defaultHeapMinimum).
const heapMinimum = 4 << 20

// headroomPercent is the GOGC that puts the next collection headroom bytes
// past a live heap of live bytes, or basePercent's if that is later. The
// runtime's goal is the larger of live × (1 + GOGC/100) and heapMinimum ×
// GOGC/100, so GOGC is also kept where the second is no more than live +
// headroom. Before the first collection (live 0) it is basePercent: the
// live heap is not known yet.
func headroomPercent(live, headroom uint64, basePercent int) int {
	if live == 0 {
		return basePercent
	}
	p := min((headroom*100+live-1)/live, (live+headroom)*100/heapMinimum)
	if p <= uint64(basePercent) {
		return basePercent
	}
	return int(p)
}
