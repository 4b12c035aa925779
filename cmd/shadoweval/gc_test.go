package main

import (
	"bytes"
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
)

// TestSetMemoryLimit: GOMEMLIMIT in the environment wins; without it the
// limit is 90 % of the cgroup's, or none where the cgroup has none.
func TestSetMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	env, had := os.LookupEnv("GOMEMLIMIT")
	defer func() {
		if had {
			os.Setenv("GOMEMLIMIT", env)
		} else {
			os.Unsetenv("GOMEMLIMIT")
		}
	}()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	os.Setenv("GOMEMLIMIT", "123456789")
	debug.SetMemoryLimit(123456789) // what the runtime read from the environment
	setMemoryLimit(log)
	if got := debug.SetMemoryLimit(-1); got != 123456789 {
		t.Errorf("GOMEMLIMIT set: limit %d, want it left at 123456789", got)
	}

	os.Unsetenv("GOMEMLIMIT")
	debug.SetMemoryLimit(math.MaxInt64)
	logs.Reset()
	setMemoryLimit(log)
	got := debug.SetMemoryLimit(-1)
	switch cgroup := cgroupMemoryMax(t); {
	case cgroup > 0 && got != int64(float64(cgroup)*0.9):
		t.Errorf("cgroup limit %d: limit %d, want 90 %%", cgroup, got)
	case got == math.MaxInt64 && !strings.Contains(logs.String(), "memory limit: none"):
		t.Errorf("no limit set, but the log says %q", logs.String())
	case got != math.MaxInt64 && !strings.Contains(logs.String(), "GOMEMLIMIT="+strconv.FormatInt(got, 10)):
		t.Errorf("limit %d set, but the log says %q", got, logs.String())
	}
}

// cgroupMemoryMax is this process's cgroup v2 memory.max; 0 when it is
// "max", or the machine has no unified cgroup to read it from.
func cgroupMemoryMax(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	_, path, ok := strings.Cut(strings.TrimSpace(string(b)), "::")
	if !ok {
		return 0
	}
	v, err := os.ReadFile("/sys/fs/cgroup" + path + "/memory.max")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
	if err != nil {
		return 0
	}
	t.Logf("cgroup memory.max %d", n)
	return n
}

func TestHeadroomPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		base, want     int
	}{
		{0, 32 * mib, 100, 100},           // nothing marked yet: Go's own
		{3 * mib, 0, 100, 100},            // no floor
		{3 * mib, 32 * mib, 100, 875},     // the runtime's minimum heap binds: 4 MiB × 8.75 = 35 MiB = live + headroom
		{8 * mib, 32 * mib, 100, 400},     // live × 5 = 40 MiB = live + headroom
		{32 * mib, 32 * mib, 100, 100},    // live × 2 is already live + headroom
		{500 * mib, 32 * mib, 100, 100},   // a big gold set: GOGC's 100 % is more than the floor
		{8 * mib, 32 * mib, 50, 400},      // a lower base is raised the same
		{1000 * mib, 32 * mib, 50, 50},    //
		{1, 32 * mib, 100, 800},           // a tiny live heap: the minimum heap bounds it
		{7 * mib, 32*mib + 1, 100, 458},   // rounded up: the floor is at least the headroom
		{33 * mib, 32 * mib, 100, 100},    //
		{16 * mib, 64 * mib, 100, 400},    //
		{4 * mib, 60 * mib, 100, 1500},    // both bounds agree
		{2 * mib, 1 << 40, 100, 26214450}, // huge headroom: the minimum heap's bound
		{1 << 40, 1 << 40, 100, 100},      //
		{1<<40 - 1, 1 << 40, 100, 101},    //
		{3 * mib, 32 * mib, 1000, 1000},   // a higher base is kept
		{3 * mib, 32 * mib, 875, 875},     //
		{3 * mib, 32 * mib, 874, 875},     //
		{4 * mib, 4 * mib, 100, 100},      //
		{4*mib - 1, 4 * mib, 100, 101},    // rounds up from 100.00002
		{12 * mib, 36 * mib, 100, 300},    //
		{12*mib + 1, 36 * mib, 100, 300},  //
		{1 * mib, 3 * mib, 100, 100},      // (1+3)/4 × 100 = 100: not above the base
		{1 * mib, 4 * mib, 100, 125},      //
		{2 * mib, 8 * mib, 100, 250},      //
	} {
		if got := headroomPercent(c.live, c.headroom, c.base); got != c.want {
			t.Errorf("headroomPercent(live %d, headroom %d, base %d) = %d, want %d", c.live, c.headroom, c.base, got, c.want)
		}
	}
}

// TestKeepHeadroom runs the tuner against the real collector: after
// collections it has set GOGC so that the heap goal is the live heap plus
// the headroom, and stopping it restores the base.
func TestKeepHeadroom(t *testing.T) {
	const headroom = 48 << 20
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	live := make([][]*int, 64) // ~8 MiB of pointers, kept live
	for i := range live {
		live[i] = make([]*int, 16<<10)
	}
	tuner, stop := keepHeadroom(headroom, 100)
	defer stop()
	// The tuner runs after collections, on the runtime's cleanup
	// goroutine: collect until it has run twice.
	for tuner.cycles.Load() < 2 {
		runtime.GC()
		runtime.Gosched()
	}
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(samples)
	marked, gogc, goal := samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Uint64()
	want := headroomPercent(marked, headroom, 100)
	if d := int64(gogc) - int64(want); d*20 > int64(want) || -d*20 > int64(want) {
		t.Errorf("GOGC %d after collections with %d bytes live, want %d (within 5 %%)", gogc, marked, want)
	}
	if goal < marked+headroom*95/100 || goal > marked+headroom*13/10 {
		t.Errorf("heap goal %d with %d bytes live, want about live + %d", goal, marked, headroom)
	}
	runtime.KeepAlive(live)

	stop()
	runtime.GC()
	metrics.Read(samples)
	if gogc := samples[1].Value.Uint64(); gogc != 100 {
		t.Errorf("GOGC %d after stop, want 100", gogc)
	}
}

// TestSetGCRespectsGOGC: GOGC in the environment turns the floor off.
func TestSetGCRespectsGOGC(t *testing.T) {
	t.Setenv("GOGC", "150")
	prev := debug.SetGCPercent(150)
	defer debug.SetGCPercent(prev)
	var logs bytes.Buffer
	setGC(slog.New(slog.NewTextHandler(&logs, nil)))
	if activeTuner.Load() != nil {
		t.Error("GOGC set, but a headroom tuner runs")
	}
	if !strings.Contains(logs.String(), "GOGC=150") {
		t.Errorf("log %q does not say GOGC=150", logs.String())
	}
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("GOGC %d, want the environment's 150", got)
	}
}
