// Package alert delivers gate alerts (SPEC §6) and writes the Prometheus
// alerting rules that express the same gates on the sidecar's own series.
//
// # Delivery
//
// A Dispatcher takes state changes of a (gate, arm) pair, firing or
// resolved, from Notify and delivers each to every configured receiver:
//
//   - nats: the Alert as JSON on <subjects.alerts>.<arm>;
//   - alertmanager: POST <alerting.alertmanager_url>/api/v2/alerts with a
//     one-element array of Alertmanager v2 postable alerts;
//   - webhook: POST <alerting.webhook_url> with the Alert as JSON (the same
//     bytes as the NATS message).
//
// Notify never blocks: each receiver has its own bounded queue and
// goroutine, so a receiver that is down or slow holds up neither scoring nor
// the other receivers. When a queue is full its oldest entry is dropped.
// A failed send is retried with exponential back-off and jitter, at most
// MaxAttempts times in all, and given up early when a newer state of the
// same alert is already queued behind it. A 4xx answer other than 408 and
// 429 is not retried. Every notification ends counted once in
// shadoweval_alert_notifications_total{receiver,result} as sent, failed
// (given up after its attempts or refused) or dropped (queue overflow,
// superseded while retrying, or abandoned at shutdown); each retry counts in
// shadoweval_alert_retries_total{receiver}.
//
// # Alertmanager
//
// The alert's labels are alertname (the gate name, as for Prometheus
// rules, where the alert name is the rule name), gate, arm, severity and
// metric; its annotations are value, threshold, window, samples, summary
// and description. Alertmanager forgets an alert that is not re-sent, so
// while an alert is firing the dispatcher re-sends it every
// alerting.resend, each time with endsAt = now + 3 × resend: if the sidecar
// dies, Alertmanager resolves the alert by itself three re-send intervals
// after the last one it received, and a slow or lost re-send or two does
// not resolve it. The resolved alert is sent with endsAt = the time the
// gate resolved. Shutting down resolves nothing: a restarted sidecar
// re-evaluates its gates, and an alert that stays quiet auto-resolves.
package alert

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Alert statuses.
const (
	StatusFiring   = "firing"
	StatusResolved = "resolved"
)

// Alert is one state change of a gate on an arm. It is also the JSON of
// the NATS message and of the webhook body.
type Alert struct {
	Gate      string `json:"gate"`
	Arm       string `json:"arm"`
	Severity  string `json:"severity"`
	Metric    string `json:"metric"`
	Op        string `json:"op"` // the passing side: >=, >, <=, <
	Window    string `json:"window"`
	CompareTo string `json:"compare_to,omitempty"`
	// Status is StatusFiring or StatusResolved.
	Status string `json:"status"`
	// Value is the judged value (arm − compare_to for a compare_to gate);
	// nil when there is none. NaN and ±Inf are sent as nil.
	Value     *float64 `json:"value"`
	Threshold float64  `json:"threshold"`
	Samples   int64    `json:"samples"`
	// StartsAt is when the gate started firing; zero means when Notify is
	// called (for a resolved alert: EndsAt).
	StartsAt time.Time `json:"starts_at"`
	// EndsAt is when a resolved gate resolved; zero means when Notify is
	// called. It is not sent for a firing alert.
	EndsAt time.Time `json:"ends_at,omitzero"`
}

// key identifies an alert across its states.
type key struct{ gate, arm string }

func (a *Alert) key() key { return key{a.Gate, a.Arm} }

// normalize fills the times Notify defaults and drops values JSON cannot
// carry.
func (a *Alert) normalize(now time.Time) {
	if a.Value != nil && (math.IsNaN(*a.Value) || math.IsInf(*a.Value, 0)) {
		a.Value = nil
	}
	if a.Value != nil {
		v := *a.Value // a copy: the caller may reuse its variable
		a.Value = &v
	}
	switch a.Status {
	case StatusFiring:
		a.EndsAt = time.Time{}
		if a.StartsAt.IsZero() {
			a.StartsAt = now
		}
	case StatusResolved:
		if a.EndsAt.IsZero() {
			a.EndsAt = now
		}
		if a.StartsAt.IsZero() || a.StartsAt.After(a.EndsAt) {
			// Alertmanager refuses endsAt before startsAt.
			if a.StartsAt.IsZero() {
				a.StartsAt = a.EndsAt
			} else {
				a.EndsAt = a.StartsAt
			}
		}
	}
}

// formatFloat writes v the shortest way that reads back exactly.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// subjectOf is the measured quantity in words: "precision" or
// "recall_at_5 of canary − live".
func (a *Alert) subjectOf() string {
	if a.CompareTo != "" {
		return fmt.Sprintf("%s of %s − %s", a.Metric, a.Arm, a.CompareTo)
	}
	return a.Metric
}

// summary and description are the Alertmanager annotations.
func (a *Alert) summary() string {
	return fmt.Sprintf("Gate %s %s on arm %s", a.Gate, a.Status, a.Arm)
}

func (a *Alert) description() string {
	value := "no value"
	if a.Value != nil {
		value = formatFloat(*a.Value)
	}
	return fmt.Sprintf("%s over %s is %s; the gate wants %s %s (%d samples).",
		a.subjectOf(), a.Window, value, a.Op, formatFloat(a.Threshold), a.Samples)
}
