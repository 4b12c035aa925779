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
	"cmp"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/shadoweval/shadoweval/sidecar/gates"
)

// Alert statuses.
const (
	StatusFiring   = "firing"
	StatusResolved = "resolved"
)

// Alert is one state change of a gate on an arm to firing or resolved:
// the gate's result with the times the receivers are sent. Its JSON
// (MarshalJSONTo) is the NATS message and the webhook body.
type Alert struct {
	gates.Result
	// Status is StatusFiring or StatusResolved.
	Status string `json:"status"`
	// StartsAt is when the gate started firing; zero means when Notify is
	// called (for a resolved alert: EndsAt).
	StartsAt time.Time `json:"starts_at"`
	// EndsAt is when a resolved gate resolved; zero means when Notify is
	// called. It is not sent for a firing alert.
	EndsAt time.Time `json:"ends_at,omitzero"`
}

// Of is the alert of a gate's transition: firing from the start of the
// breakage, or resolved at the transition. ok is false for a transition
// to another state, which alerts nobody.
func Of(tr gates.Transition) (a Alert, ok bool) {
	a = Alert{Result: tr.Result, StartsAt: tr.ActiveAt}
	switch tr.State {
	case gates.Firing:
		a.Status = StatusFiring
	case gates.Resolved:
		a.Status, a.EndsAt = StatusResolved, tr.At
	default:
		return Alert{}, false
	}
	return a, true
}

// MarshalJSONTo writes the alert's wire form: the gate, arm, severity,
// metric, op (the passing side), window and compare_to (left out when
// empty), the status, the judged value (null when there is none; Notify
// sends NaN and ±Inf as none), threshold and samples, starts_at, and
// ends_at when resolved. The result's state, verdict, reason and interval
// stay out: receivers key on the status.
func (a Alert) MarshalJSONTo(enc *jsontext.Encoder) error {
	err := enc.WriteToken(jsontext.BeginObject)
	member := func(name string, v any) {
		if err == nil {
			err = enc.WriteToken(jsontext.String(name))
		}
		if err == nil {
			err = json.MarshalEncode(enc, v)
		}
	}
	member("gate", a.Gate)
	member("arm", a.Arm)
	member("severity", a.Severity)
	member("metric", a.Metric)
	member("op", a.Op)
	member("window", a.Window)
	if a.CompareTo != "" {
		member("compare_to", a.CompareTo)
	}
	member("status", a.Status)
	member("value", a.Value)
	member("threshold", a.Threshold)
	member("samples", a.Samples)
	member("starts_at", a.StartsAt)
	if !a.EndsAt.IsZero() {
		member("ends_at", a.EndsAt)
	}
	if err != nil {
		return err
	}
	return enc.WriteToken(jsontext.EndObject)
}

// MarshalJSON is the wire form of MarshalJSONTo for encoding/json.
func (a Alert) MarshalJSON() ([]byte, error) { return json.Marshal(a) }

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
		cmp.Or(a.Subject, a.Metric), a.Window, value, a.Op, formatFloat(a.Threshold), a.Samples)
}
