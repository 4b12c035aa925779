// Package stream is the sidecar's NATS side: the connection, the core NATS
// subscriptions, the JetStream consumer and its catch-ups, the partitioned
// consumer group, KV buckets, publishing (dead letters), the embedded
// server and replaying a file onto a subject. The events it carries are
// package wire's; stream knows nothing of what is done with them.
package stream
