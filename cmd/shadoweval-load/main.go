// Command shadoweval-load measures the live sidecar under load (issue "The
// live sidecar"): it starts a NATS server, sends N pre-generated trace
// events from a separate publisher process and reports, for the same
// messages in the same run,
//
//   - the raw NATS rate: a plain subscriber process that only counts,
//     measured before the flood and again right before each sustained-rate
//     probe (the run's raw rate is their median, --probe-raw);
//   - the sidecar's sustained events/s (from its own counters), loss, NATS
//     slow-consumer drops, p99 event-to-window lag and peak RSS.
//
// With --duration and --rate it runs a soak at a fixed rate instead and
// samples the sidecar's RSS every --sample to show that it stays flat.
//
// With --replicas R (and --partitions P, at least R) it measures a cluster
// (SPEC §10): a JetStream server, R sidecars as members 0..R-1 of one
// cluster of P partitions, and N events keyed by qid published into the
// stream with acks; it reports the events/s until the replicas together
// have counted them all, and each replica's share, CPU and peak RSS.
//
// Every process is a child of this one, on 127.0.0.1 only: the NATS server
// (`shadoweval-load server`, the nats-server library in a process of its
// own, so that its CPU and memory are neither the sidecar's nor the
// publisher's), the publisher (`shadoweval-load publish`), the counting
// subscriber (`shadoweval-load sink`) and the sidecar (`shadoweval run`,
// built from this repository). Children die with this process
// (PR_SET_PDEATHSIG), every wait is bounded, and the tool stops by itself.
//
// Usage:
//
//	shadoweval-load [--n 2000000] [--runs 3] [--shape compact|full] [--bin bin/shadoweval]
//	shadoweval-load --duration 10m --rate 200000 [--sample 10s]
//	shadoweval-load --replicas 3 [--partitions 6] [--n 2000000] [--runs 3]
package main

import (
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "server":
			return runServer(args[1:], stdout, stderr)
		case "publish":
			return runPublish(args[1:], stdout, stderr)
		case "sink":
			return runSink(args[1:], stdout, stderr)
		case "bench":
			args = args[1:]
		}
	}
	return runBench(args, stdout, stderr)
}
