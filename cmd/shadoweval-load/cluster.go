package main

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/shadoweval/shadoweval/config"
)

// Cluster throughput (--replicas R --partitions P): each run starts a
// JetStream server with a fresh store, R sidecars as members 0..R-1 of one
// cluster of P partitions, then publishes --n events keyed by qid into the
// stream and times how long the replicas take to count them all together.
// A fresh store each run keeps one run's stream and consumer state out of
// the next.

// clusterConfig is the sidecar config of one member: --sidecar-config (or
// nothing) with the NATS server, JetStream, the cluster, the HTTP address
// and the gold file put in, checked as the sidecar will check it.
func (o *benchOpts) clusterConfig(member int, natsURL, listen, goldPath string) ([]byte, error) {
	doc := map[string]any{}
	if o.sidecarConfig != "" {
		b, err := os.ReadFile(o.sidecarConfig)
		if err != nil {
			return nil, fmt.Errorf("--sidecar-config: %w", err)
		}
		if err := yaml.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("--sidecar-config %s: %w", o.sidecarConfig, err)
		}
		if doc == nil { // an empty file
			doc = map[string]any{}
		}
	}
	for _, kv := range []struct {
		path string
		v    any
	}{
		{"nats.url", natsURL},
		{"nats.jetstream", true},
		{"cluster.partitions", o.partitions},
		{"cluster.members", o.replicas},
		{"cluster.member", strconv.Itoa(member)},
		{"http.listen", listen},
		{"gold.file", goldPath},
	} {
		if err := setPath(doc, kv.path, kv.v); err != nil {
			return nil, fmt.Errorf("--sidecar-config %s: %w", o.sidecarConfig, err)
		}
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("sidecar config of member %d: %w", member, err)
	}
	if _, err := config.Parse(b, fmt.Sprintf("sidecar config of member %d", member)); err != nil {
		return nil, err
	}
	return b, nil
}

// setPath sets the dotted key path of a YAML document to v, making the
// sections on the way.
func setPath(doc map[string]any, path string, v any) error {
	keys := strings.Split(path, ".")
	m := doc
	for i, k := range keys[:len(keys)-1] {
		switch sub := m[k].(type) {
		case map[string]any:
			m = sub
		case nil:
			next := map[string]any{}
			m[k], m = next, next
		default:
			return fmt.Errorf("%s is not a mapping", strings.Join(keys[:i+1], "."))
		}
	}
	m[keys[len(keys)-1]] = v
	return nil
}

// replica is one running member of the cluster.
type replica struct {
	side *child
	addr string
	base scrape
	last scrape
	cpu0 time.Duration
}

// replicaResult is what one member did in a run.
type replicaResult struct {
	counted float64
	cpu     time.Duration // user+system, from the first publish to the end
	hwmKB   int64         // peak RSS (VmHWM)
}

// clusterResult is one cluster run.
type clusterResult struct {
	rate          float64 // events/s counted by the replicas together
	pubRate       float64 // msgs/s acknowledged by the stream
	elapsed       time.Duration
	loss          int64
	acked, failed int64
	ackError      string
	lag           float64 // p99, all replicas' buckets added
	lagInf        bool
	dropped       float64
	outcomes      map[string]float64
	serverCPU     time.Duration
	replicas      []replicaResult
}

func (o *benchOpts) cluster() error {
	fmt.Fprintf(o.stdout, "cluster: %d replicas (members 0..%d), %d partitions, %d events per run keyed by qid, shape %s, %d runs; JetStream publisher with acks (at most %d outstanding)\n\n",
		o.replicas, o.replicas-1, o.partitions, o.n, o.shape, o.runs, ackWindow)
	var rs []clusterResult
	for i := 1; i <= o.runs; i++ {
		r, err := o.clusterRun(i)
		if err != nil {
			return fmt.Errorf("run %d, cluster: %w", i, err)
		}
		rs = append(rs, r)
		fmt.Fprintf(o.stderr, "run %d: %d replicas, %d partitions: %.0f events/s, loss %d, load average %s\n", i, o.replicas, o.partitions, r.rate, r.loss, loadAvg())
	}
	o.clusterTable(rs)
	return nil
}

func (o *benchOpts) clusterRun(run int) (clusterResult, error) {
	var r clusterResult
	tag := "cluster-" + strconv.Itoa(run)
	stopServer, err := o.startServer("server-"+tag+".log", filepath.Join(o.dir, "jetstream-"+strconv.Itoa(run)))
	if err != nil {
		return r, err
	}
	defer stopServer()
	reps, err := o.startReplicas(tag)
	for _, rp := range reps {
		defer rp.side.stop(syscall.SIGKILL, time.Second)
	}
	if err != nil {
		return r, err
	}
	pub, err := o.startPublisher(tag, o.n, 0)
	if err != nil {
		return r, err
	}
	defer pub.stop(syscall.SIGKILL, 5*time.Second)
	var base scrape
	for i := range reps {
		if reps[i].base, err = getScrape(reps[i].addr); err != nil {
			return r, fmt.Errorf("replica %d: %w", i, err)
		}
		reps[i].last = reps[i].base
		base = addScrape(base, reps[i].base)
	}
	for i := range reps {
		reps[i].cpu0 = procCPU(reps[i].side.pid())
	}
	server0 := procCPU(o.server.pid())
	if err := pub.send("go"); err != nil {
		return r, err
	}
	sum := func() (scrape, error) {
		var s scrape
		for i := range reps {
			one, err := getScrape(reps[i].addr)
			if err != nil {
				return s, fmt.Errorf("replica %d: %w", i, err)
			}
			reps[i].last = one
			s = addScrape(s, one)
		}
		return s, nil
	}
	s1, done, err := o.waitCountedBy(sum, base, float64(o.n), pub.done, nil)
	if err != nil {
		return r, err
	}
	r.serverCPU = procCPU(o.server.pid()) - server0
	for i := range reps {
		rr := replicaResult{counted: reps[i].last.events - reps[i].base.events, cpu: procCPU(reps[i].side.pid()) - reps[i].cpu0}
		_, rr.hwmKB, _ = procStatus(reps[i].side.pid())
		r.replicas = append(r.replicas, rr)
	}
	pr, err := publisherResult(pub, min(time.Minute, o.remaining()))
	if err != nil {
		return r, err
	}
	o.meanBytes = pr.MeanBytes
	counted := s1.events - base.events
	r.loss = o.n - int64(counted)
	r.elapsed = done.Sub(time.Unix(0, pr.Start))
	r.rate = counted / r.elapsed.Seconds()
	r.pubRate = float64(pr.Acked) / time.Duration(pr.End-pr.Start).Seconds()
	r.acked, r.failed, r.ackError = pr.Acked, pr.AckFailed, pr.AckError
	r.lag, _, r.lagInf = lagQuantile(base, s1, 0.99)
	r.dropped = s1.dropped - base.dropped
	r.outcomes = map[string]float64{}
	for k, v := range s1.outcomes {
		r.outcomes[k] = v - base.outcomes[k]
	}
	for _, rp := range reps {
		rp.side.stop(syscall.SIGTERM, 30*time.Second)
	}
	return r, nil
}

// startReplicas writes each member's config and starts the sidecars, then
// waits until every one is ready; the replicas started are returned even
// on an error, for the caller to stop.
func (o *benchOpts) startReplicas(tag string) ([]replica, error) {
	var env []string
	if o.sidecarEnv != "" {
		env = strings.Split(o.sidecarEnv, ",")
	}
	var reps []replica
	for i := range o.replicas {
		port, err := freePort()
		if err != nil {
			return reps, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		b, err := o.clusterConfig(i, o.url, addr, o.goldPath)
		if err != nil {
			return reps, err
		}
		path := filepath.Join(o.dir, fmt.Sprintf("sidecar-%s-%d.yaml", tag, i))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return reps, err
		}
		side, err := startChildEnv(fmt.Sprintf("sidecar %d", i), filepath.Join(o.dir, fmt.Sprintf("sidecar-%s-%d.log", tag, i)), env, o.bin, "run", "--config", path)
		if err != nil {
			return reps, err
		}
		reps = append(reps, replica{side: side, addr: addr})
	}
	// Started together, the members join the group at about the same
	// time; waiting for each in turn is then no slower than the last.
	ctx, cancel := context.WithTimeout(context.Background(), min(time.Minute, o.remaining()))
	defer cancel()
	for i, rp := range reps {
		if err := waitReady(ctx, rp.addr, rp.side); err != nil {
			return reps, fmt.Errorf("replica %d: %w", i, err)
		}
	}
	return reps, nil
}

// addScrape adds the counters of b to a: the cluster's totals. The lag
// buckets add by bound (every replica has the same bounds).
func addScrape(a, b scrape) scrape {
	if b.at.After(a.at) {
		a.at = b.at
	}
	a.events += b.events
	a.dropped += b.dropped
	a.slow += b.slow
	a.disconnects += b.disconnects
	a.goroutines += b.goroutines
	if a.outcomes == nil {
		a.outcomes = map[string]float64{}
	}
	for k, v := range b.outcomes {
		a.outcomes[k] += v
	}
	for k, v := range b.rejected {
		if a.rejected == nil {
			a.rejected = map[string]float64{}
		}
		a.rejected[k] += v
	}
	lag := map[float64]float64{}
	for _, x := range a.lag {
		lag[x.le] += x.count
	}
	for _, x := range b.lag {
		lag[x.le] += x.count
	}
	a.lag = a.lag[:0:0]
	for le, n := range lag {
		a.lag = append(a.lag, bucket{le, n})
	}
	slices.SortFunc(a.lag, func(x, y bucket) int { return cmp.Compare(x.le, y.le) })
	return a
}

func (o *benchOpts) clusterTable(rs []clusterResult) {
	w := o.stdout
	mib := func(kb int64) float64 { return float64(kb) / 1024 }
	fmt.Fprintf(w, "messages: mean %.0f bytes of payload (shape %s), subjects rag.trace.{%s}.<key>, %d gold items\n\n", o.meanBytes, o.shape, o.arms, o.items)
	fmt.Fprintf(w, "%-6s %11s %11s %5s %7s %11s %12s\n", "run", "events/s", "stored/s", "loss", "dropped", "p99 lag", "server CPU")
	for i, r := range rs {
		fmt.Fprintf(w, "%-6d %11.0f %11.0f %5d %7.0f %11s %6.2f cores\n", i+1, r.rate, r.pubRate, r.loss, r.dropped, fmtLag(r.lag, r.lagInf), r.serverCPU.Seconds()/r.elapsed.Seconds())
		fmt.Fprintf(w, "       %-8s %10s %6s %11s %8s %10s\n", "replica", "counted", "share", "CPU", "CPU/ev", "peak RSS")
		var total float64
		for _, x := range r.replicas {
			total += x.counted
		}
		for j, x := range r.replicas {
			share := math.NaN()
			if total > 0 {
				share = x.counted / total
			}
			fmt.Fprintf(w, "       %-8d %10.0f %6.2f %5.2f cores %5.2f µs %6.0f MiB\n", j, x.counted, share, x.cpu.Seconds()/r.elapsed.Seconds(), float64(x.cpu)/1e3/max(x.counted, 1), mib(x.hwmKB))
		}
	}
	col := func(f func(clusterResult) float64) []float64 {
		var xs []float64
		for _, r := range rs {
			xs = append(xs, f(r))
		}
		return xs
	}
	fmt.Fprintf(w, "%-6s %11.0f %11.0f %5.0f\n", "median",
		median(col(func(r clusterResult) float64 { return r.rate })),
		median(col(func(r clusterResult) float64 { return r.pubRate })),
		median(col(func(r clusterResult) float64 { return float64(r.loss) })))
	fmt.Fprintln(w)
	fmt.Fprintf(w, "events/s      N / (time the sum over the replicas of shadoweval_events_total{kind=\"trace\"} (any outcome) reached N - first publish), polled every %v and interpolated\n", o.pollEvery)
	fmt.Fprintf(w, "stored/s      messages the stream acknowledged / (last ack - first publish): the publisher's side (it waits for acks, at most %d outstanding, so that nothing is dropped at the stream's ingest)\n", ackWindow)
	fmt.Fprintf(w, "loss          N - events the replicas counted; dropped = shadoweval_nats_dropped_messages_total, all replicas; acks refused %v\n", col(func(r clusterResult) float64 { return float64(r.failed) }))
	for i, r := range rs {
		if r.ackError != "" {
			fmt.Fprintf(w, "              run %d: first refusal %s\n", i+1, r.ackError)
		}
	}
	fmt.Fprintf(w, "p99 lag       shadoweval_event_lag_seconds, the buckets of all replicas added\n")
	fmt.Fprintf(w, "server CPU    the NATS server's user+system CPU over the same time (JetStream stores every message and delivers it to one member)\n")
	fmt.Fprintf(w, "replica       counted: its share of the events (a member owns %s of the %d partitions); CPU: user+system from the first publish until all were counted; peak RSS: VmHWM\n", ownedShare(o.partitions, o.replicas), o.partitions)
	if len(rs) > 0 {
		fmt.Fprintf(w, "outcomes (run 1) %v\n", rs[0].outcomes)
	}
	fmt.Fprintf(w, "load average at end %s\n", loadAvg())
}

// ownedShare says how many partitions a member owns when p are shared
// among m evenly.
func ownedShare(p, m int) string {
	if p%m == 0 {
		return strconv.Itoa(p / m)
	}
	return fmt.Sprintf("%d or %d", p/m, p/m+1)
}
