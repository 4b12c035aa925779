package sidecar

import (
	"context"
	"strconv"
	"time"
)

func itoa(i int) string { return strconv.Itoa(i) }

// every calls f every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
