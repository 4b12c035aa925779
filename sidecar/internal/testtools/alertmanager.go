package testtools

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
)

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
