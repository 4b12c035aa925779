package main

import (
	"bytes"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	gogc, had := os.LookupEnv("GOGC")
	defer func() {
		if had {
			os.Setenv("GOGC", gogc)
		} else {
			os.Unsetenv("GOGC")
		}
	}()

	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	os.Unsetenv("GOGC")
	tuneGC(log)
	if got := debug.SetGCPercent(100); got != sidecarGOGC {
		t.Errorf("GOGC unset: percent %d, want %d", got, sidecarGOGC)
	}
	if !strings.Contains(logs.String(), "gogc=400") {
		t.Errorf("log %q does not say gogc=400", logs.String())
	}

	logs.Reset()
	os.Setenv("GOGC", "150")
	debug.SetGCPercent(150) // what the runtime read from the environment
	tuneGC(log)
	if got := debug.SetGCPercent(100); got != 150 {
		t.Errorf("GOGC=150 in the environment: percent %d, want it left at 150", got)
	}
	if !strings.Contains(logs.String(), "gogc=environment") {
		t.Errorf("log %q does not say the environment set GOGC", logs.String())
	}
}
