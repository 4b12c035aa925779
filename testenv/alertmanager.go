package testenv

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

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

// NeedAlertmanager is the alertmanager of Debian's prometheus-alertmanager
// (NeedBinary).
func NeedAlertmanager(t testing.TB) string {
	t.Helper()
	return NeedBinary(t, "prometheus-alertmanager", "prometheus-alertmanager", "alertmanager")
}

// StartAlertmanager runs the alertmanager of Debian's
// prometheus-alertmanager with config, clustering off and its data in a
// temporary directory, listening on addr ("": a free port), and returns its
// base URL once GET /-/ready answers. The process is killed when the test
// ends, and its output logged if the test failed.
func StartAlertmanager(t testing.TB, addr, config string) string {
	t.Helper()
	bin := NeedAlertmanager(t)
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
	Poll(t, alertmanagerReady, "alertmanager to be ready", func() string {
		select {
		case <-exited:
			t.Fatalf("alertmanager exited at start:\n%s", out.String())
		default:
		}
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return err.Error() + "\n" + out.String()
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.Status + "\n" + out.String()
		}
		return ""
	})
	return base
}

// AlertmanagerAlert is an alert of Alertmanager's GET /api/v2/alerts, the
// members the tests read.
type AlertmanagerAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
	Status      struct {
		State string `json:"state"`
	} `json:"status"`
	Receivers []struct {
		Name string `json:"name"`
	} `json:"receivers"`
}

// AlertmanagerAlerts lists the alerts of the Alertmanager at base.
func AlertmanagerAlerts(base string) ([]AlertmanagerAlert, error) {
	resp, err := http.Get(base + "/api/v2/alerts")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/v2/alerts: %s %v %s", resp.Status, err, body)
	}
	var list []AlertmanagerAlert
	if err := json.Unmarshal(body, &list, json.RejectUnknownMembers(false)); err != nil {
		return nil, fmt.Errorf("GET /api/v2/alerts: %w\n%s", err, body)
	}
	return list, nil
}

// MustAlertmanagerAlerts is AlertmanagerAlerts that fails the test on an
// error.
func MustAlertmanagerAlerts(t testing.TB, base string) []AlertmanagerAlert {
	t.Helper()
	list, err := AlertmanagerAlerts(base)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// FindAlert is the alert of list labelled with gate and arm, the last one
// when several are.
func FindAlert(list []AlertmanagerAlert, gate, arm string) (found AlertmanagerAlert, ok bool) {
	for _, a := range list {
		if a.Labels["gate"] == gate && a.Labels["arm"] == arm {
			found, ok = a, true
		}
	}
	return found, ok
}

// WaitAlert polls the alert list of the Alertmanager at base until cond,
// given the alert of gate and arm (ok false when it is not listed),
// returns "", and returns that alert; it fails the test after timeout
// with cond's last explanation.
func WaitAlert(t testing.TB, timeout time.Duration, base, gate, arm string, cond func(a AlertmanagerAlert, ok bool) string) AlertmanagerAlert {
	t.Helper()
	var found AlertmanagerAlert
	Poll(t, timeout, fmt.Sprintf("alert %s/%s in Alertmanager", gate, arm), func() string {
		list, err := AlertmanagerAlerts(base)
		if err != nil {
			return err.Error()
		}
		a, ok := FindAlert(list, gate, arm)
		found = a
		return cond(a, ok)
	})
	return found
}

// AlertmanagerMetric is the sum of the samples of name whose label text
// holds all of parts, from the /metrics of the Alertmanager at base.
func AlertmanagerMetric(t testing.TB, base, name string, parts ...string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
lines:
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue lines
			}
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}
