package alert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/config"
)

// Receiver names, the receiver label of the metrics.
const (
	ReceiverNATS         = "nats"
	ReceiverAlertmanager = "alertmanager"
	ReceiverWebhook      = "webhook"
)

// Results, the result label of shadoweval_alert_notifications_total.
const (
	resultSent    = "sent"
	resultFailed  = "failed"
	resultDropped = "dropped"
)

// PublishFunc publishes v as JSON on a NATS subject; the app passes
// (*stream.Publisher).PublishJSON.
type PublishFunc func(subject string, v any) error

// Options configure a Dispatcher. Config, Publish and SubjectPrefix choose
// the receivers; the rest have working zero values.
type Options struct {
	// Config is the alerting section: an empty URL leaves its receiver
	// out; Resend <= 0 means one minute.
	Config config.AlertingConfig
	// Publish sends the NATS messages; nil leaves the NATS receiver out.
	Publish PublishFunc
	// SubjectPrefix is subjects.alerts; alerts go to <prefix>.<arm>.
	SubjectPrefix string
	// Registerer receives the metrics; nil registers nothing. Metrics
	// already registered (a second Dispatcher after a reload) are reused.
	Registerer prometheus.Registerer
	// Logger; nil: slog.Default().
	Logger *slog.Logger
	// GeneratorURL, when set, is the generatorURL of Alertmanager alerts
	// (the status page, say).
	GeneratorURL string
	// HTTPClient sends to Alertmanager and the webhook; nil: a client
	// with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// QueueSize bounds each receiver's queue; 0: 1024.
	QueueSize int
	// MaxAttempts is how many times one notification is tried; 0: 5.
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the wait before a retry, which
	// doubles from MinBackoff up to MaxBackoff, then is jittered down by
	// up to half; 0: 1 s and 30 s.
	MinBackoff, MaxBackoff time.Duration
}

// Dispatcher delivers alerts to NATS, Alertmanager and a webhook. Notify
// may be called from any goroutine, before, during and after Run.
type Dispatcher struct {
	log         *slog.Logger
	now         func() time.Time
	resend      time.Duration
	maxAttempts int
	minBackoff  time.Duration
	maxBackoff  time.Duration
	receivers   []*receiver

	stopping chan struct{} // closed by Stop
	stopOnce sync.Once

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc // aborts the workers
	done    chan struct{}      // closed when Run's workers have ended
}

// metrics are shared by every Dispatcher registered on one registry.
type metrics struct {
	notifications *prometheus.CounterVec // receiver, result
	retries       *prometheus.CounterVec // receiver
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shadoweval_alert_notifications_total",
			Help: "Alert notifications by receiver and result: sent, failed (gave up after retries or refused), dropped (queue full, superseded by a newer state, or abandoned at shutdown).",
		}, []string{"receiver", "result"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "shadoweval_alert_retries_total",
			Help: "Alert notification retries by receiver.",
		}, []string{"receiver"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []**prometheus.CounterVec{&m.notifications, &m.retries} {
		if err := reg.Register(*c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("alert metrics: %w", err)
			}
			existing, ok := are.ExistingCollector.(*prometheus.CounterVec)
			if !ok {
				return nil, fmt.Errorf("alert metrics: %w", err)
			}
			*c = existing
		}
	}
	return m, nil
}

// New builds a Dispatcher; it delivers nothing until Run.
func New(o Options) (*Dispatcher, error) {
	d := &Dispatcher{
		log:         o.Logger,
		now:         o.Now,
		resend:      time.Duration(o.Config.Resend),
		maxAttempts: o.MaxAttempts,
		minBackoff:  o.MinBackoff,
		maxBackoff:  o.MaxBackoff,
		stopping:    make(chan struct{}),
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	if d.now == nil {
		d.now = time.Now
	}
	if d.resend <= 0 {
		d.resend = time.Minute
	}
	if d.maxAttempts <= 0 {
		d.maxAttempts = 5
	}
	if d.minBackoff <= 0 {
		d.minBackoff = time.Second
	}
	if d.maxBackoff <= 0 {
		d.maxBackoff = 30 * time.Second
	}
	d.maxBackoff = max(d.maxBackoff, d.minBackoff)
	queueSize := o.QueueSize
	if queueSize <= 0 {
		queueSize = 1024
	}
	client := o.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}

	add := func(name string, send sendFunc, resend bool) {
		r := &receiver{
			name:     name,
			send:     send,
			resend:   resend,
			queueCap: queueSize,
			wake:     make(chan struct{}, 1),
			sent:     m.notifications.WithLabelValues(name, resultSent),
			failed:   m.notifications.WithLabelValues(name, resultFailed),
			dropped:  m.notifications.WithLabelValues(name, resultDropped),
			retries:  m.retries.WithLabelValues(name),
		}
		if resend {
			r.active = make(map[key]Alert)
		}
		d.receivers = append(d.receivers, r)
	}
	if o.Publish != nil {
		add(ReceiverNATS, natsSender(o.Publish, o.SubjectPrefix), false)
	}
	if o.Config.AlertmanagerURL != "" {
		send, err := alertmanagerSender(client, o.Config.AlertmanagerURL, o.GeneratorURL, d.resend, d.now)
		if err != nil {
			return nil, err
		}
		add(ReceiverAlertmanager, send, true)
	}
	if o.Config.WebhookURL != "" {
		send, err := webhookSender(client, o.Config.WebhookURL)
		if err != nil {
			return nil, err
		}
		add(ReceiverWebhook, send, false)
	}
	return d, nil
}

// Receivers names the configured receivers, in delivery order.
func (d *Dispatcher) Receivers() []string {
	names := make([]string, len(d.receivers))
	for i, r := range d.receivers {
		names[i] = r.name
	}
	return names
}

// Notify queues a state change for every receiver and returns at once. An
// alert whose Status is neither firing nor resolved is logged and ignored.
// Once Run has ended, alerts are counted as dropped.
func (d *Dispatcher) Notify(a Alert) {
	if a.Status != StatusFiring && a.Status != StatusResolved {
		d.log.Warn("alert with an unknown status ignored", "gate", a.Gate, "arm", a.Arm, "status", a.Status)
		return
	}
	a.normalize(d.now())
	for _, r := range d.receivers {
		r.enqueue(a, true)
	}
}

// Run delivers alerts until Stop has drained the queues or ctx is done,
// and returns nil after Stop and ctx.Err() when ctx ended it. Cancelling
// ctx abandons what is queued (counted as dropped); to drain on shutdown,
// call Stop, and run the Dispatcher on a context that outlives the
// shutdown signal. Run may be called once.
func (d *Dispatcher) Run(ctx context.Context) error {
	d.mu.Lock()
	if d.started {
		d.mu.Unlock()
		return errors.New("alert dispatcher: Run called twice")
	}
	d.started = true
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.cancel = cancel
	d.done = make(chan struct{})
	defer close(d.done)
	d.mu.Unlock()

	var wg sync.WaitGroup
	for _, r := range d.receivers {
		wg.Go(func() { d.work(ctx, r) })
	}
	wg.Wait()
	select {
	case <-d.stopping:
		return nil
	default:
		return ctx.Err()
	}
}

// Stop stops taking alerts and waits for Run to deliver what is queued.
// When ctx ends first, the deliveries still under way are abandoned
// (counted as dropped) and Stop returns ctx.Err() once Run has returned.
// Stop before Run returns at once; a Run after it delivers what is queued
// and returns. Alerts notified once Run has drained are counted as dropped.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.stopOnce.Do(func() { close(d.stopping) })
	for _, r := range d.receivers {
		r.wakeUp()
	}
	d.mu.Lock()
	started, cancel, done := d.started, d.cancel, d.done
	d.mu.Unlock()
	if !started {
		return nil // a later Run delivers what is queued, then returns
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		cancel()
		<-done
		return ctx.Err()
	}
}

// work is one receiver's delivery loop.
func (d *Dispatcher) work(ctx context.Context, r *receiver) {
	defer r.close()
	var tick <-chan time.Time
	if r.resend {
		t := time.NewTicker(d.resend)
		defer t.Stop()
		tick = t.C
	}
	stopping := d.stopping
	for {
		if a, ok := r.pop(); ok {
			d.deliver(ctx, r, a)
			if ctx.Err() != nil {
				return
			}
			continue
		}
		if stopping == nil {
			return // stopped and drained
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-tick:
			r.enqueueResends()
		case <-stopping:
			stopping, tick = nil, nil // drain what is queued, then end
		}
	}
}

// deliver sends a until it is sent, refused, out of attempts, superseded
// by a newer state of the same alert, or abandoned with ctx.
func (d *Dispatcher) deliver(ctx context.Context, r *receiver, a Alert) {
	for attempt := 1; ; attempt++ {
		err := r.send(ctx, a)
		if err == nil {
			r.sent.Inc()
			d.log.Debug("alert sent", "receiver", r.name, "gate", a.Gate, "arm", a.Arm, "status", a.Status, "attempts", attempt)
			return
		}
		giveUp := func(counter prometheus.Counter, why string) {
			counter.Inc()
			d.log.Warn("alert not delivered: "+why, "receiver", r.name, "gate", a.Gate, "arm", a.Arm,
				"status", a.Status, "attempts", attempt, "err", err)
		}
		var perm *permanentError
		switch {
		case ctx.Err() != nil:
			giveUp(r.dropped, "shutting down")
			return
		case errors.As(err, &perm):
			giveUp(r.failed, "refused")
			return
		case attempt >= d.maxAttempts:
			giveUp(r.failed, "out of attempts")
			return
		case r.superseded(a):
			giveUp(r.dropped, "superseded by a newer state")
			return
		}
		r.retries.Inc()
		t := time.NewTimer(d.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			giveUp(r.dropped, "shutting down")
			return
		case <-t.C:
		}
		if r.superseded(a) {
			giveUp(r.dropped, "superseded by a newer state")
			return
		}
	}
}

// backoff is the wait after the attempt-th failure: MinBackoff doubled
// attempt−1 times, capped at MaxBackoff, then jittered into [d/2, d].
func (d *Dispatcher) backoff(attempt int) time.Duration {
	b := d.minBackoff
	for i := 1; i < attempt && b < d.maxBackoff; i++ {
		b *= 2
	}
	b = min(b, d.maxBackoff)
	half := b / 2
	return half + rand.N(b-half+1)
}

// sendFunc delivers one alert; a *permanentError is not retried.
type sendFunc func(ctx context.Context, a Alert) error

// permanentError is a failure that retrying cannot fix (a 4xx answer).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// receiver is one output with its queue.
type receiver struct {
	name   string
	send   sendFunc
	resend bool // re-send firing alerts every resend interval

	sent, failed, dropped, retries prometheus.Counter

	wake     chan struct{} // capacity 1: something was queued
	queueCap int

	mu     sync.Mutex
	queue  []Alert
	active map[key]Alert // firing alerts to re-send; nil unless resend
	closed bool          // the worker has ended: queue nothing more
}

// enqueue adds a to the queue, dropping the oldest entry when full. track
// records a in the firing set that is re-sent (Notify; not re-sends).
func (r *receiver) enqueue(a Alert, track bool) {
	r.mu.Lock()
	if track && r.active != nil {
		if a.Status == StatusFiring {
			r.active[a.key()] = a
		} else {
			delete(r.active, a.key())
		}
	}
	r.enqueueLocked(a)
	r.mu.Unlock()
	r.wakeUp()
}

func (r *receiver) enqueueLocked(a Alert) {
	if r.closed {
		r.dropped.Inc()
		return
	}
	if len(r.queue) >= r.queueCap {
		r.queue[0] = Alert{}
		r.queue = r.queue[1:]
		r.dropped.Inc()
	}
	r.queue = append(r.queue, a)
}

// enqueueResends queues every firing alert that is not already queued. It
// holds the lock throughout, so a re-send never lands behind the resolved
// state of its alert.
func (r *receiver) enqueueResends() {
	r.mu.Lock()
	for k, a := range r.active {
		if !r.queuedLocked(k) {
			r.enqueueLocked(a)
		}
	}
	r.mu.Unlock()
}

func (r *receiver) pop() (Alert, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 {
		return Alert{}, false
	}
	a := r.queue[0]
	r.queue[0] = Alert{}
	r.queue = r.queue[1:]
	return a, true
}

// superseded says whether a newer state of a's alert is queued.
func (r *receiver) superseded(a Alert) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.queuedLocked(a.key())
}

func (r *receiver) queuedLocked(k key) bool {
	for i := range r.queue {
		if r.queue[i].key() == k {
			return true
		}
	}
	return false
}

// close ends queueing; what is still queued is counted as dropped.
func (r *receiver) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if n := len(r.queue); n > 0 {
		r.dropped.Add(float64(n))
		r.queue = nil
	}
}

func (r *receiver) wakeUp() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}
