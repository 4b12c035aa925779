// Package testtools starts the real outside programs the sidecar's tests
// talk to (Alertmanager) and finds the ones they run (promtool, chromium):
// a test that needs one is skipped when it is not installed, and fails
// instead under CI, where make deps installs them all.
package testtools

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// InCI says whether $CI is set to something true.
func InCI() bool {
	v := strings.ToLower(strings.TrimSpace(os.Getenv("CI")))
	return v != "" && v != "0" && v != "false" && v != "no"
}

// NeedBinary finds the first of names on $PATH. When none is there it
// skips the test, or fails it under CI; pkg is the Debian package that has
// it (make deps installs it).
func NeedBinary(t testing.TB, pkg string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := strings.Join(names, " or ") + " is not installed (Debian package " + pkg + "; make deps installs it)"
	if InCI() {
		t.Fatalf("%s; CI is set, so this is a failure", msg)
	}
	t.Skipf("%s; skipping (set CI=true to make this a failure)", msg)
	return ""
}

// SyncBuffer collects a process's output, safe to read while it writes.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// FreeAddr is a 127.0.0.1 address whose port was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// AlertmanagerNullConfig routes every alert to a receiver that drops it,
// grouping each alert alone and flushing at once: what a test that reads
// GET /api/v2/alerts needs.
const AlertmanagerNullConfig = `route:
  receiver: "null"
  group_by: ["..."]
  group_wait: 10ms
  group_interval: 100ms
  repeat_interval: 1h
receivers:
  - name: "null"
`

// alertmanagerReady bounds the wait for a starting Alertmanager.
const alertmanagerReady = 30 * time.Second

// StartAlertmanager runs the alertmanager of Debian's
// prometheus-alertmanager with config, clustering off and its data in a
// temporary directory, listening on addr ("": a free port), and returns its
// base URL once GET /-/ready answers. The process is killed when the test
// ends, and its output logged if the test failed.
func StartAlertmanager(t testing.TB, addr, config string) string {
	t.Helper()
	bin := NeedBinary(t, "prometheus-alertmanager", "prometheus-alertmanager", "alertmanager")
	if addr == "" {
		addr = FreeAddr(t)
	}
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfgFile, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin,
		"--config.file="+cfgFile,
		"--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--cluster.listen-address=",
		"--log.level=debug",
	)
	out := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel() // kills the process started above
		<-exited
		if t.Failed() {
			t.Logf("alertmanager output:\n%s", out.String())
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(alertmanagerReady)
	for {
		select {
		case <-exited:
			t.Fatalf("alertmanager exited at start:\n%s", out.String())
		default:
		}
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("alertmanager not ready after %v:\n%s", alertmanagerReady, out.String())
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
}
