package stream

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/testenv"
)

func TestEmbeddedPublishSubscribeShutdown(t *testing.T) {
	e, err := StartEmbedded(EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	if !strings.HasPrefix(e.ClientURL(), "nats://127.0.0.1:") || strings.HasSuffix(e.ClientURL(), ":4222") {
		t.Fatalf("ClientURL %q: want 127.0.0.1 on a random port", e.ClientURL())
	}
	store := e.StoreDir()
	if _, err := os.Stat(store); err != nil {
		t.Fatalf("temp store dir: %v", err)
	}

	nc, err := Connect(context.Background(), ConnOptions{URL: e.ClientURL(), Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	got := testenv.Collect(t, nc, "rag.trace.>", 1)
	if err := nc.Publish("rag.trace.live", []byte(`{"qid":"q1"}`)); err != nil {
		t.Fatal(err)
	}
	if m := testenv.Next(t, got); string(m.Data) != `{"qid":"q1"}` || m.Subject != "rag.trace.live" {
		t.Fatalf("got %s %s", m.Subject, m.Data)
	}

	// JetStream is on and stores in the temp dir.
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: "RAG", Subjects: []string{"rag.>"}}); err != nil {
		t.Fatalf("add stream: %v", err)
	}
	if _, err := js.Publish("rag.answer.canary", []byte(`{}`)); err != nil {
		t.Fatalf("js publish: %v", err)
	}

	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	e.Shutdown()
	e.Shutdown() // idempotent
	nc.Close()
	testenv.Next(t, closed)
	if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp store dir %s still there after Shutdown: %v", store, err)
	}
}

func TestEmbeddedConfiguredStoreDirAndLogger(t *testing.T) {
	dir := t.TempDir()
	var logs testenv.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	e, err := StartEmbedded(EmbeddedOptions{Port: -1, StoreDir: dir, Logger: logger, MaxPayload: 4096})
	if err != nil {
		t.Fatal(err)
	}
	nc := testenv.Connect(t, e.ClientURL())
	if got := nc.MaxPayload(); got != 4096 {
		t.Fatalf("max payload %d, want 4096", got)
	}
	e.Shutdown()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("configured store dir removed: %v", err)
	}
	if !strings.Contains(logs.String(), "nats-server") {
		t.Fatalf("logger got nothing from the server:\n%s", logs.String())
	}
}

func TestEmbeddedPortInUse(t *testing.T) {
	s := testenv.RunBasic(t)
	port := s.Addr().(*net.TCPAddr).Port
	start := time.Now()
	_, err := StartEmbedded(EmbeddedOptions{Port: port})
	if err == nil {
		t.Fatal("started a second server on a port in use")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %v to report a port in use", time.Since(start))
	}
	if !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Fatalf("error does not name the port: %v", err)
	}
}

// With FreePortIfBusy a port in use is no error: the server takes a free
// one, and Port and ClientURL say which.
func TestEmbeddedFreePortIfBusy(t *testing.T) {
	s := testenv.RunBasic(t)
	busy := s.Addr().(*net.TCPAddr).Port
	e, err := StartEmbedded(EmbeddedOptions{Port: busy, FreePortIfBusy: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	if e.Port() == busy || e.Port() <= 0 {
		t.Fatalf("port %d, want a free one other than %d", e.Port(), busy)
	}
	if want := "nats://127.0.0.1:" + strconv.Itoa(e.Port()); e.ClientURL() != want {
		t.Fatalf("ClientURL %s, want %s", e.ClientURL(), want)
	}

	// A free port asked for is the one taken.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	e2, err := StartEmbedded(EmbeddedOptions{Port: free, FreePortIfBusy: true, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Shutdown()
	if e2.Port() != free {
		t.Fatalf("port %d, want %d", e2.Port(), free)
	}
}
