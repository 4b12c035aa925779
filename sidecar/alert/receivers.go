package alert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
)

// natsSender publishes the alert on <prefix>.<arm>.
func natsSender(publish PublishFunc, prefix string) sendFunc {
	return func(_ context.Context, a Alert) error {
		subject := a.Arm
		if prefix != "" {
			subject = prefix + "." + a.Arm
		}
		return publish(subject, a)
	}
}

// PostableAlert is one element of the body of Alertmanager's
// POST /api/v2/alerts.
type PostableAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt,omitzero"`
	EndsAt       time.Time         `json:"endsAt,omitzero"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// Postable is a as Alertmanager takes it, sent at now: a firing alert ends
// at now + 3 × resend unless re-sent (see the package comment), a resolved
// one at its EndsAt.
func Postable(a Alert, now time.Time, resend time.Duration, generatorURL string) PostableAlert {
	labels := map[string]string{}
	for _, l := range [...]struct{ name, value string }{
		{"alertname", a.Gate},
		{"gate", a.Gate},
		{"arm", a.Arm},
		{"severity", a.Severity},
		{"metric", a.Metric},
	} {
		if l.value != "" { // Alertmanager treats an empty label as absent
			labels[l.name] = l.value
		}
	}
	annotations := map[string]string{
		"threshold":   formatFloat(a.Threshold),
		"window":      a.Window,
		"samples":     fmt.Sprint(a.Samples),
		"summary":     a.summary(),
		"description": a.description(),
	}
	if a.Value != nil {
		annotations["value"] = formatFloat(*a.Value)
	}
	p := PostableAlert{
		Labels:       labels,
		Annotations:  annotations,
		StartsAt:     a.StartsAt.UTC(),
		GeneratorURL: generatorURL,
	}
	if a.Status == StatusResolved {
		p.EndsAt = a.EndsAt.UTC()
	} else {
		p.EndsAt = now.Add(3 * resend).UTC()
	}
	return p
}

// alertmanagerSender posts one alert to <base>/api/v2/alerts.
func alertmanagerSender(client *http.Client, base, generatorURL string, resend time.Duration, now func() time.Time) (sendFunc, error) {
	target, where, err := endpoint(base, "/api/v2/alerts")
	if err != nil {
		return nil, fmt.Errorf("alerting.alertmanager_url: %w", err)
	}
	return func(ctx context.Context, a Alert) error {
		body, err := json.Marshal([]PostableAlert{Postable(a, now(), resend, generatorURL)}, json.Deterministic(true))
		if err != nil {
			return &permanentError{err}
		}
		return post(ctx, client, target, where, body)
	}, nil
}

// webhookSender posts the alert's JSON to the webhook URL.
func webhookSender(client *http.Client, rawURL string) (sendFunc, error) {
	target, where, err := endpoint(rawURL, "")
	if err != nil {
		return nil, fmt.Errorf("alerting.webhook_url: %w", err)
	}
	return func(ctx context.Context, a Alert) error {
		body, err := json.Marshal(a)
		if err != nil {
			return &permanentError{err}
		}
		return post(ctx, client, target, where, body)
	}, nil
}

// endpoint appends path to base and names it for messages without its
// credentials, path or query (a webhook URL often holds a token).
func endpoint(base, path string) (target, where string, err error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", "", errors.New("not a valid URL") // the error would quote the URL
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", "", errors.New("want an http:// or https:// URL with a host")
	}
	if path != "" {
		u.Path = strings.TrimRight(u.Path, "/") + path
		u.RawPath = ""
	}
	return u.String(), u.Scheme + "://" + u.Host, nil
}

// post sends body as JSON; any 2xx answer is success, and a 4xx other
// than 408 and 429 is a permanent failure.
func post(ctx context.Context, client *http.Client, target, where string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return &permanentError{fmt.Errorf("post to %s: cannot build the request", where)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "shadoweval")
	resp, err := client.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // url.Error quotes the whole URL
		}
		return fmt.Errorf("post to %s: %w", where, err)
	}
	defer resp.Body.Close()
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // reuse the connection
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	err = fmt.Errorf("post to %s: %s: %q", where, resp.Status, bytes.TrimSpace(excerpt))
	if resp.StatusCode >= 400 && resp.StatusCode < 500 &&
		resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests {
		return &permanentError{err}
	}
	return err
}
