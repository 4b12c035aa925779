package sidecar_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/testenv"
)

// TestClusterMembersStartTogether: the members of a scaled-out sidecar
// started at once on a fresh NATS cluster (as a StatefulSet with
// podManagementPolicy Parallel starts them) all start: each creates or
// finds the stream, the buckets and the consumer group the others are
// creating at the same moment.
func TestClusterMembersStartTogether(t *testing.T) {
	t.Parallel()
	c := testenv.RunCluster(t, 3)
	gold := copyFile(t, "testdata/gold_v1.jsonl", t.TempDir(), "gold.jsonl")
	const members = 3
	var wg sync.WaitGroup
	errs := make([]error, members)
	for i := range members {
		cfg := clusterConfig(t, c.URLs(), gold)
		cfg.Cluster.Partitions = members
		cfg.Cluster.Member = fmt.Sprint(i)
		app, err := sidecar.New(sidecar.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// No deadline, as shadoweval run starts: each NATS request
			// then has the client's own timeout.
			errs[i] = app.Start(context.Background())
		}()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			_ = app.Stop(ctx)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("member %d: %v", i, err)
		}
	}
}
