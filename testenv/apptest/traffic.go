package apptest

import (
	"maps"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/testenv"
	"github.com/shadoweval/shadoweval/wire/gen"
)

// Traffic publishes the trace events of a gen.TraceSource on
// rag.trace.<arm>, as a retriever serving the arms would, and counts them
// per arm. It is safe for concurrent use.
type Traffic struct {
	t  testing.TB
	nc *nats.Conn

	mu   sync.Mutex
	src  *gen.TraceSource
	sent map[string]int64
	edit func(arm string, event []byte) []byte
}

// NewTraffic is the traffic of gen.NewTraceSource(opt) on nc.
func NewTraffic(t testing.TB, nc *nats.Conn, opt gen.Options) *Traffic {
	return &Traffic{t: t, nc: nc, src: gen.NewTraceSource(opt), sent: map[string]int64{}}
}

// Traffic is the traffic of gen.NewTraceSource(opt) on the app's
// connection, its events stamped with the fake clock unless opt.Now says
// otherwise.
func (a *App) Traffic(opt gen.Options) *Traffic {
	if opt.Now == nil {
		opt.Now = a.Clock.Now
	}
	return NewTraffic(a.T, a.NC, opt)
}

// Edit has every event rewritten by edit before it is published.
func (tr *Traffic) Edit(edit func(arm string, event []byte) []byte) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.edit = edit
}

// SetQuality sets the quality of arm's future events.
func (tr *Traffic) SetQuality(arm string, q float64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.src.SetQuality(arm, q)
}

// Send publishes n events of each arm given, interleaved, and flushes:
// the server has them when it returns.
func (tr *Traffic) Send(n int, arms ...string) {
	tr.t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for range n {
		for _, arm := range arms {
			ev := tr.src.NextFor(arm)
			if tr.edit != nil {
				ev = tr.edit(arm, ev)
			}
			if err := tr.nc.Publish("rag.trace."+arm, ev); err != nil {
				tr.t.Fatalf("publish: %v", err)
			}
			tr.sent[arm]++
		}
	}
	testenv.Flush(tr.t, tr.nc)
}

// Sent is how many events of arm were published.
func (tr *Traffic) Sent(arm string) int64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.sent[arm]
}

// SentAll is how many events of each arm were published.
func (tr *Traffic) SentAll() map[string]int64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return maps.Clone(tr.sent)
}
