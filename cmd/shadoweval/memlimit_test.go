package main

import (
	"bytes"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
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
