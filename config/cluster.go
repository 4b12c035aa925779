package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// maxPartitions bounds cluster.partitions: each partition is a filter
// subject of a JetStream consumer.
const maxPartitions = 1024

// DefaultClusterBucket is the cluster's KV bucket when cluster.kv_bucket is
// empty.
const DefaultClusterBucket = "shadoweval_cluster"

// Clustered reports whether the input is partitioned among replicas.
func (c *ClusterConfig) Clustered() bool { return c.Partitions > 0 }

// MemberCount is the number of members of the consumer group.
func (c *ClusterConfig) MemberCount() int {
	if c.Members == 0 {
		return c.Partitions
	}
	return c.Members
}

// Bucket is the KV bucket of the members' parts.
func (c *ClusterConfig) Bucket() string {
	if c.KVBucket == "" {
		return DefaultClusterBucket
	}
	return c.KVBucket
}

// MemberName is this replica's member: cluster.member, or else the ordinal
// at the end of the host name (shadoweval-4 → 4) modulo the member count.
func (c *ClusterConfig) MemberName() (string, error) {
	if c.Member != "" {
		return c.Member, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("cluster.member is empty and the host name is unknown: %w", err)
	}
	return memberFromHost(host, c.MemberCount())
}

func memberFromHost(host string, members int) (string, error) {
	i := strings.LastIndexByte(host, '-')
	n, err := strconv.Atoi(host[i+1:])
	if err != nil || n < 0 || members <= 0 {
		return "", fmt.Errorf("cluster.member is empty and the host name %q does not end in a StatefulSet ordinal (-N)", host)
	}
	return strconv.Itoa(n % members), nil
}

func (k *checker) cluster() {
	c := &k.c.Cluster
	switch {
	case c.Partitions < 0 || c.Partitions > maxPartitions:
		k.errf("cluster.partitions", "must be between 0 (one replica) and %d, got %d", maxPartitions, c.Partitions)
		return
	case c.Partitions == 0:
		return
	case !k.c.NATS.JetStream:
		k.errf("cluster.partitions", "needs nats.jetstream: true (partitions are JetStream consumer groups)")
	}
	if c.Members < 0 || c.Members > c.Partitions {
		k.errf("cluster.members", "must be between 0 (one per partition) and cluster.partitions (%d), got %d", c.Partitions, c.Members)
	} else if c.Member != "" {
		if m, err := strconv.Atoi(c.Member); err != nil || m < 0 || m >= c.MemberCount() || strconv.Itoa(m) != c.Member {
			k.errf("cluster.member", "must be an integer in [0, %d) or empty (the host name's ordinal), got %q", c.MemberCount(), c.Member)
		}
	}
	k.bucket("cluster.kv_bucket", c.KVBucket)
	if b := c.Bucket(); b == k.c.Gold.KVBucket || b == k.c.Analysis.KVBucket {
		k.errf("cluster.kv_bucket", "%q is also the gold or analysis bucket; the cluster needs a bucket of its own", b)
	}
	k.positiveDuration("cluster.publish_interval", c.PublishInterval)
	if c.StaleAfter < 2*c.PublishInterval {
		k.errf("cluster.stale_after", "must be at least twice cluster.publish_interval (%s), got %s", fmtDur(c.PublishInterval), fmtDur(c.StaleAfter))
	}
	if c.Gold != "partitions" && c.Gold != "all" {
		k.errf("cluster.gold", "want partitions or all, got %q", c.Gold)
	}
	k.partitionSubjects()
}

// partitionSubjects checks that the four input subjects are P.> with
// prefixes of one length: the stream's subject transform puts the
// partition of the key token (the second token after P) in front.
func (k *checker) partitionSubjects() {
	s := &k.c.Subjects
	tokens := -1
	for _, f := range []struct{ path, v string }{
		{"subjects.trace", s.Trace}, {"subjects.retrieval", s.Retrieval}, {"subjects.answer", s.Answer}, {"subjects.judgement", s.Judgement},
	} {
		prefix, ok := strings.CutSuffix(f.v, ".>")
		if !ok || strings.ContainsAny(prefix, "*>") {
			k.errf(f.path, "%q: with cluster.partitions the input subjects must be PREFIX.> (publishers send PREFIX.<arm>.<key>)", f.v)
			continue
		}
		n := strings.Count(prefix, ".") + 1
		if tokens >= 0 && n != tokens {
			k.errf(f.path, "%q: with cluster.partitions every input subject's prefix must have %d tokens, as the first one's", f.v, tokens)
		}
		if tokens < 0 {
			tokens = n
		}
	}
}
