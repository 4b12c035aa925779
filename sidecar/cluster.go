package sidecar

// Scale-out (SPEC §10, cluster.partitions > 0).
//
// The input is consumed through a static JetStream partitioned consumer
// group (stream.ConsumePartitioned): each replica is an instance of one
// member, which owns some of the partitions; one instance per member is
// pinned, the others are hot standbys that rebuild from the stream. A
// qid's events share a partition, so its λ groups and split halves stay on
// one member.
//
// Every cluster.publish_interval each instance writes its part to the
// cluster.kv_bucket bucket under <member>.<instance>: for every arm,
// window and content type its window as an accumulator (counts, exact
// sums, ΔS sketches, judged λ groups) and outcome counts, and every
// analysis' accumulators. Every replica watches the bucket and answers
// the window, verdict, analysis, Flagger, Kayenta, Argo and status-page
// requests with the parts merged: of each member the part that applied
// the most of the stream among those younger than cluster.stale_after
// (else the most advanced one, marked stale). Each answer lists the parts
// it merged and their age; a member stale or missing turns a verdict that
// would pass into inconclusive.
//
// Analyses are kept in analysis.kv_bucket as in JetStream mode; each
// replica watches it, so an analysis started or ended on one reaches every
// member, and survives the replica that started it. It starts one
// publish_interval after its request, so that every member has it before
// its first event.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
)

// ReasonNoPartitionKey is the rejection of a message whose subject has no
// key token when the input is partitioned.
const ReasonNoPartitionKey = "no_partition_key"

// cluster is the replica's part in a partitioned consumer group: its
// subscription, the parts it writes and reads, and the answers merged
// from them.
type cluster struct {
	cfg      *config.Config
	log      *slog.Logger
	now      func() time.Time
	win      *window.Windows
	outcomes *window.OutcomeCounter
	analyses *analysis.Manager
	stores   *replicaGauges
	nc       *nats.Conn // set by subscribe

	member     string
	instance   string
	members    []string
	partitions []int
	ackWait    time.Duration
	sub        *stream.PartitionedSubscription
	kv         jetstream.KeyValue
	watcher    jetstream.KeyWatcher

	mu    sync.RWMutex
	parts map[string]*memberPart // by KV key

	published *prometheus.CounterVec
	lateStart prometheus.Counter
}

// memberPart is what an instance writes to the cluster bucket.
type memberPart struct {
	Member   string    `json:"member"`
	Instance string    `json:"instance"`
	At       time.Time `json:"at"`
	// Applied is the stream sequence of the last message applied: of a
	// member's fresh parts, the most advanced is merged.
	Applied  uint64           `json:"applied"`
	Windows  []windowPart     `json:"windows"`
	Analyses []analysis.Saved `json:"analyses,omitempty"`
}

// windowPart is one arm, window and content type ("" all) of a part.
type windowPart struct {
	Arm    string           `json:"arm"`
	Window string           `json:"window"`
	Type   string           `json:"type,omitempty"`
	Events map[string]int64 `json:"events"`
	Acc    json.RawMessage  `json:"acc"`
}

// newCluster sets up the replica's member: its name and partitions, and
// gold restricted to them when cluster.gold is partitions. The cluster
// reads the windows, outcome counts and analyses of the App (c's fields
// are set by the caller).
func newCluster(c *cluster, gold *GoldStore, reg prometheus.Registerer) (*cluster, error) {
	cc := &c.cfg.Cluster
	member, err := cc.MemberName()
	if err != nil {
		return nil, err
	}
	// nats.ack_wait sets how soon a standby takes over a silent pinned
	// instance: pcgroups derives the pin's lifetime from it.
	c.member, c.instance, c.parts, c.ackWait = member, nuid.Next(), map[string]*memberPart{}, time.Duration(c.cfg.NATS.AckWait)
	for i := range cc.MemberCount() {
		c.members = append(c.members, strconv.Itoa(i))
	}
	c.partitions = stream.MemberPartitions(c.members, cc.Partitions, member)
	if cc.Gold == "partitions" {
		p, err := stream.NewPartitioner(c.partitionPrefixTokens(), cc.Partitions)
		if err != nil {
			return nil, err
		}
		mine := make(map[int]bool, len(c.partitions))
		for _, n := range c.partitions {
			mine[n] = true
		}
		gold.Keep = func(qid string) bool { return mine[p.Partition(stream.PartitionKey(qid))] }
	}
	c.published = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "shadoweval_cluster_part_writes_total", Help: "Writes of this replica's windows and analyses to cluster.kv_bucket, by result.",
	}, []string{"result"})
	c.lateStart = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "shadoweval_cluster_analyses_learned_late_total", Help: "Analyses this replica learned of after applying events past their start: its part of them misses those events.",
	})
	// of reads a count of the subscription, 0 before it exists.
	of := func(count func(*stream.PartitionedSubscription) uint64) func() float64 {
		return func() float64 {
			if c.sub == nil {
				return 0
			}
			return float64(count(c.sub))
		}
	}
	reg.MustRegister(c.published, c.lateStart,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "shadoweval_cluster_applied_sequence", Help: "Stream sequence of the last message this replica applied.",
		}, of((*stream.PartitionedSubscription).Applied)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "shadoweval_cluster_deliveries_total", Help: "Messages the member's consumer delivered to this replica (it was the pinned instance for them; a standby gets none).",
		}, of((*stream.PartitionedSubscription).Deliveries)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "shadoweval_cluster_catch_ups_total", Help: "Replays of the member's partitions this replica ran: on joining, each time it was pinned anew, and as a standby.",
		}, of((*stream.PartitionedSubscription).CatchUps)))
	return c, nil
}

// partitionPrefixTokens is the token count of the input subjects' PREFIX
// (PREFIX.>, checked by config).
func (c *cluster) partitionPrefixTokens() int {
	p := c.cfg.Subjects.Trace
	n := 1
	for i := 0; i < len(p)-2; i++ {
		if p[i] == '.' {
			n++
		}
	}
	return n
}

// subscribe opens the cluster bucket and joins the consumer group, its
// replay from start; handle gets the member's messages, unkeyed those
// stored without a partition.
func (c *cluster) subscribe(ctx context.Context, nc *nats.Conn, start time.Time, handle, unkeyed func(*stream.Message)) error {
	cc := &c.cfg.Cluster
	c.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	// A part is rewritten every publish_interval; one not rewritten for
	// ten times stale_after belongs to an instance that is gone.
	kvc := jetstream.KeyValueConfig{
		Bucket: cc.Bucket(), Description: "shadoweval cluster: each replica's windows and analyses", History: 1,
		TTL: 10 * time.Duration(cc.StaleAfter), Storage: jetstream.FileStorage, Replicas: c.cfg.NATS.Replicas,
	}
	c.kv, err = js.CreateKeyValue(ctx, kvc)
	if errors.Is(err, jetstream.ErrBucketExists) {
		// Made before, or by another member starting at the same moment
		// (CreateOrUpdateKeyValue there times out while the bucket's
		// stream is being made). It keeps its copies, reported, not
		// changed; the TTL follows stale_after.
		var old jetstream.KeyValue
		if old, err = js.KeyValue(ctx, cc.Bucket()); err == nil {
			if kvc.Replicas, err = stream.BucketReplicas(ctx, old); err == nil {
				c.kv, err = js.UpdateKeyValue(ctx, kvc)
			}
		}
	}
	if err != nil {
		return c.stores.refusal(fmt.Sprintf("cluster.kv_bucket %q", cc.Bucket()), err)
	}
	c.stores.note("cluster_bucket", cc.Bucket(), kvc.Replicas)
	// The watch outlives ctx, which ends with Start.
	if c.watcher, err = c.kv.WatchAll(context.Background()); err != nil {
		return fmt.Errorf("cluster.kv_bucket %q: %w", cc.Bucket(), err)
	}
	c.sub, err = stream.ConsumePartitioned(ctx, nc, stream.PartitionedOptions{
		Stream: c.cfg.NATS.Stream, Group: c.cfg.NATS.Durable,
		Subjects:   inputSubjects(c.cfg.Subjects),
		Partitions: cc.Partitions, Members: c.members, Member: c.member,
		StartTime: start, MaxAge: streamMaxAge(c.cfg),
		Replicas: c.cfg.NATS.Replicas, AckWait: c.ackWait, Heartbeat: time.Duration(c.cfg.NATS.Heartbeat),
		OnError:   func(err error) { c.log.Warn("cluster consumer", "err", err) },
		OnUnkeyed: unkeyed,
	}, handle)
	if err != nil {
		c.watcher.Stop()
		return c.stores.refusal("cluster", err)
	}
	c.stores.note("stream", c.cfg.NATS.Stream, c.sub.Replicas())
	c.log.Info("joined the consumer group", "group", c.cfg.NATS.Durable, "member", c.member, "instance", c.instance,
		"partitions", c.partitions, "rebuilt_to_sequence", c.sub.Applied())
	return nil
}

// subscription is the member's subscription; nil before it joined.
func (c *cluster) subscription() *stream.PartitionedSubscription { return c.sub }

// loops writes this replica's part and follows the other parts and the
// analyses until ctx ends, each in a goroutine run by goBackground.
func (c *cluster) loops(ctx context.Context, goBackground func(func())) {
	goBackground(func() { c.watchParts(ctx) })
	goBackground(func() { c.watchAnalyses(ctx) })
	interval := time.Duration(c.cfg.Cluster.PublishInterval)
	goBackground(func() {
		every(ctx, interval, func() {
			if err := c.sub.Refresh(ctx, 2*interval); err != nil && ctx.Err() == nil {
				c.log.Warn("cluster: catching up with the member's stream", "err", err)
			}
			c.publishPart(ctx)
		})
	})
}

// publishPart writes this replica's part.
func (c *cluster) publishPart(ctx context.Context) {
	data, err := c.encodePart(c.now())
	if err == nil {
		_, err = c.kv.Put(ctx, c.member+"."+c.instance, data)
	}
	if err != nil {
		if ctx.Err() == nil {
			c.published.WithLabelValues("failure").Inc()
			c.log.Warn("cluster: part not written", "bucket", c.cfg.Cluster.Bucket(), "err", err)
		}
		return
	}
	c.published.WithLabelValues("success").Inc()
}

func (c *cluster) encodePart(now time.Time) ([]byte, error) {
	p := memberPart{Member: c.member, Instance: c.instance, At: now, Applied: c.sub.Applied()}
	for _, arm := range c.win.Arms() {
		types := append([]string{""}, c.win.Types(arm)...)
		for _, spec := range c.win.Specs() {
			for _, typ := range types {
				acc, ok := c.win.Part(arm, spec.Name, typ, now)
				if !ok {
					continue
				}
				b, err := json.Marshal(acc)
				if err != nil {
					return nil, fmt.Errorf("cluster part: %w", err)
				}
				wp := windowPart{Arm: arm, Window: spec.Name, Type: typ, Acc: b}
				if typ == "" {
					wp.Events = c.outcomes.Counts(arm, spec.Name, now).Map()
				}
				p.Windows = append(p.Windows, wp)
			}
		}
	}
	for _, x := range c.analyses.List() {
		// Open λ groups are no outcome yet, and no group spans members.
		s, err := x.Save(analysis.SaveClosedGroups)
		if err != nil {
			return nil, err
		}
		p.Analyses = append(p.Analyses, s)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(p); err != nil {
		return nil, fmt.Errorf("cluster part: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("cluster part: %w", err)
	}
	if limit := c.nc.MaxPayload() - 1024; int64(buf.Len()) > limit {
		return nil, fmt.Errorf("cluster part of %d bytes is over the server's max_payload (%d)", buf.Len(), c.nc.MaxPayload())
	}
	return buf.Bytes(), nil
}

// maxPartJSON bounds a part's JSON once unzipped: parts come from a
// bucket any client of the server may write.
const maxPartJSON = 256 << 20

func decodePart(data []byte) (*memberPart, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("cluster part: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(zr, maxPartJSON+1))
	if err != nil {
		return nil, fmt.Errorf("cluster part: %w", err)
	}
	if len(b) > maxPartJSON {
		return nil, fmt.Errorf("cluster part: over %d bytes unzipped", maxPartJSON)
	}
	return parsePart(b)
}

// parsePart reads a part's JSON, refusing one whose windows do not hold
// accumulators: a reader merges them unchecked.
func parsePart(b []byte) (*memberPart, error) {
	var p memberPart
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("cluster part: %w", err)
	}
	if p.Member == "" {
		return nil, errors.New("cluster part: no member")
	}
	for i, wp := range p.Windows {
		var cu window.Cumulative
		if err := json.Unmarshal(wp.Acc, &cu); err != nil {
			return nil, fmt.Errorf("cluster part of member %s: window %d (%s/%s): %w", p.Member, i, wp.Arm, wp.Window, err)
		}
		for k, v := range wp.Events {
			if v < 0 {
				return nil, fmt.Errorf("cluster part of member %s: window %d (%s/%s): %d %s events", p.Member, i, wp.Arm, wp.Window, v, k)
			}
		}
	}
	return &p, nil
}

// watchParts keeps c.parts as the bucket holds them.
func (c *cluster) watchParts(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-c.watcher.Updates():
			if !ok {
				return
			}
			if e == nil {
				continue // the initial values are in
			}
			if e.Operation() != jetstream.KeyValuePut {
				c.mu.Lock()
				delete(c.parts, e.Key())
				c.mu.Unlock()
				continue
			}
			p, err := decodePart(e.Value())
			if err != nil {
				c.log.Warn("cluster: unreadable part", "key", e.Key(), "err", err)
				continue
			}
			p.At = e.Created() // the server's clock, for every reader alike
			c.mu.Lock()
			c.parts[e.Key()] = p
			c.mu.Unlock()
		}
	}
}

// watchAnalyses applies the analyses other replicas start and end.
func (c *cluster) watchAnalyses(ctx context.Context) {
	js, err := jetstream.New(c.nc)
	if err != nil {
		return
	}
	bucket := c.cfg.Analysis.KVBucket
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		c.log.Warn("cluster: analyses started elsewhere will not reach this replica", "bucket", bucket, "err", err)
		return
	}
	// The bucket's current keys come first: one put between the restore at
	// Start and this watch is not missed.
	w, err := kv.WatchAll(ctx)
	if err != nil {
		c.log.Warn("cluster: analyses started elsewhere will not reach this replica", "bucket", bucket, "err", err)
		return
	}
	defer w.Stop()
	m := c.analyses
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			s, err := analysis.DecodeSaved(e.Value())
			if err != nil {
				continue
			}
			x, known := m.Get(s.Spec.ID)
			switch {
			case !known:
				if last := c.sub.LastStored(); !last.IsZero() && last.After(s.Spec.Start) {
					c.lateStart.Inc()
					c.log.Warn("cluster: analysis learned after its start; this member's part of it misses the events between", "analysis", s.Spec.ID, "start", s.Spec.Start, "applied_to", last)
				}
				if err := m.Restore(s); err != nil {
					c.log.Warn("cluster: analysis from another replica not taken", "analysis", s.Spec.ID, "err", err)
				}
			case !s.Ended.IsZero() && x.Running():
				m.End(s.Spec.ID, s.Ended)
			}
		}
	}
}

// stop leaves the group and removes this replica's part, so that readers
// go to the member's next instance at once.
func (c *cluster) stop(ctx context.Context) {
	if c.sub == nil {
		return
	}
	c.sub.Stop()
	if c.watcher != nil {
		c.watcher.Stop()
	}
	if c.kv != nil {
		_ = c.kv.Delete(ctx, c.member+"."+c.instance)
	}
}

// chosenParts is, of each member, the part merged (nil when it has none)
// and its freshness at now.
func (c *cluster) chosenParts(now time.Time) ([]*memberPart, []analysis.MemberFreshness) {
	stale := time.Duration(c.cfg.Cluster.StaleAfter)
	c.mu.RLock()
	defer c.mu.RUnlock()
	parts := make([]*memberPart, len(c.members))
	fresh := make([]analysis.MemberFreshness, len(c.members))
	for i, m := range c.members {
		var best *memberPart
		bestFresh := false
		for _, p := range c.parts {
			if p.Member != m {
				continue
			}
			f := now.Sub(p.At) <= stale
			switch {
			case best == nil, f && !bestFresh:
			case f != bestFresh:
				continue
			case p.Applied < best.Applied, p.Applied == best.Applied && !p.At.After(best.At):
				continue
			}
			best, bestFresh = p, f
		}
		parts[i] = best
		fresh[i] = analysis.MemberFreshness{Member: m, Missing: best == nil}
		if best != nil {
			age := max(now.Sub(best.At), 0)
			fresh[i].Instance, fresh[i].Applied, fresh[i].AgeSeconds, fresh[i].Stale = best.Instance, best.Applied, age.Seconds(), !bestFresh
		}
	}
	return parts, fresh
}

// report merges the members' parts of arm, window and type.
func (c *cluster) report(arm, win, typ string, now time.Time) (WindowReport, bool) {
	parts, fresh := c.chosenParts(now)
	var acc *window.Cumulative
	events := map[string]int64{}
	for _, p := range parts {
		if p == nil {
			continue
		}
		for _, wp := range p.Windows {
			if wp.Arm != arm || wp.Window != win {
				continue
			}
			if wp.Type == "" {
				for k, v := range wp.Events {
					events[k] += v
				}
			}
			if wp.Type != typ {
				continue
			}
			var cu window.Cumulative
			if err := json.Unmarshal(wp.Acc, &cu); err != nil {
				c.log.Warn("cluster: unreadable window part", "member", p.Member, "err", err)
				continue
			}
			if acc == nil {
				acc = &cu
			} else if err := acc.Merge(&cu); err != nil {
				c.log.Warn("cluster: window parts do not merge", "member", p.Member, "err", err)
			}
		}
	}
	if acc == nil {
		return WindowReport{}, false
	}
	for _, o := range vocab.Outcomes {
		events[o] += 0 // every outcome, as a replica's report has them
	}
	rep := WindowReport{Arm: arm, Window: win, Type: typ, Events: events, Metrics: metricValues(acc.Metrics()), Members: fresh}
	return rep, true
}

// arms are the arms of every member's part, sorted.
func (c *cluster) arms(now time.Time) []string {
	parts, _ := c.chosenParts(now)
	seen := map[string]bool{}
	for _, p := range parts {
		if p == nil {
			continue
		}
		for _, wp := range p.Windows {
			seen[wp.Arm] = true
		}
	}
	arms := make([]string, 0, len(seen))
	for arm := range seen {
		arms = append(arms, arm)
	}
	slices.Sort(arms)
	return arms
}

// result judges an over every member's part of it.
func (c *cluster) result(an *analysis.Analysis) analysis.Result {
	now := c.now()
	parts, fresh := c.chosenParts(now)
	id := an.Spec().ID
	var saved []analysis.Saved
	var behind []string
	for i, p := range parts {
		found := false
		if p != nil {
			for _, s := range p.Analyses {
				if s.Spec.ID == id {
					saved, found = append(saved, s), true
					break
				}
			}
		}
		switch {
		case !found:
			behind = append(behind, "member "+fresh[i].Member+" has not written this analysis yet")
		case fresh[i].Stale:
			behind = append(behind, fmt.Sprintf("member %s's part is %.0f s old (cluster.stale_after %s)", fresh[i].Member, fresh[i].AgeSeconds, time.Duration(c.cfg.Cluster.StaleAfter)))
		}
	}
	r, err := an.MergedResult(saved)
	if errors.Is(err, analysis.ErrNoParts) {
		r = an.Result()
		r.Verdict, r.Reason, r.Checks = analysis.Inconclusive, "no member has written this analysis yet", nil
	} else if err != nil {
		c.log.Warn("cluster: analysis parts do not merge", "analysis", id, "err", err)
		r = an.Result()
		r.Verdict, r.Reason = analysis.Inconclusive, err.Error()
	}
	if len(behind) > 0 && r.Verdict == analysis.Pass {
		r.Verdict, r.Reason = analysis.Inconclusive, joinReasons(behind)
	}
	r.Members = fresh
	return r
}

func joinReasons(rs []string) string {
	var b bytes.Buffer
	for i, r := range rs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(r)
	}
	return b.String()
}
