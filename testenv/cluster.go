package testenv

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natstest "github.com/nats-io/nats-server/v2/test"
	"github.com/nats-io/nats.go"
)

// Cluster is a JetStream cluster of nats-servers in this process, formed
// as nats-server's own tests form one (createJetStreamClusterExplicit):
// every server has its name, its store in t.TempDir() and a route to every
// server, itself included, so each expects the whole cluster from the
// start. Every connection to a server, from a client or from another
// server, goes through a proxy (nats-server's tests do that with
// netProxy), so that Crash can take a server away as a dead machine goes:
// its connections cut without a word and only then the server shut down,
// its stepping down heard by nobody. Start brings it back on the same
// ports and store.
type Cluster struct {
	t    testing.TB
	Name string
	opts []server.Options
	srvs []*server.Server
	// The servers' own ports, fixed on the first start; the proxies read
	// them as they connect.
	mu                        sync.Mutex
	clientPorts, clusterPorts []int
	// clients[i] is server i's client address; routes[i][j] is server
	// i's route to server j.
	clients []*proxy
	routes  [][]*proxy
}

// RunCluster starts a cluster of n JetStream servers and waits until it
// has a meta leader and every server is current; it shuts down when the
// test ends.
func RunCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{
		t: t, Name: "C" + strconv.Itoa(n), opts: make([]server.Options, n), srvs: make([]*server.Server, n),
		clientPorts: make([]int, n), clusterPorts: make([]int, n), clients: make([]*proxy, n), routes: make([][]*proxy, n),
	}
	for i := range n {
		c.clients[i] = newProxy(t, func() string { return c.addr(c.clientPorts, i) })
		for j := range n {
			c.routes[i] = append(c.routes[i], newProxy(t, func() string { return c.addr(c.clusterPorts, j) }))
		}
	}
	for i := range n {
		opts := jetStreamOptions(t.TempDir())
		opts.ServerName = fmt.Sprintf("S-%d", i+1)
		opts.Cluster.Name = c.Name
		opts.Cluster.Host = "127.0.0.1"
		opts.Cluster.Port = -1
		// Clients know the servers by their proxies only, and servers find
		// each other through the configured routes only: an address
		// gossiped would bypass the proxies.
		opts.Cluster.NoAdvertise = true
		opts.Cluster.Advertise = "127.0.0.1:1"
		for j := range n {
			opts.Routes = append(opts.Routes, &url.URL{Scheme: "nats-route", Host: c.routes[i][j].addr})
		}
		c.opts[i] = opts
	}
	for i := range n {
		c.Start(i)
	}
	t.Cleanup(func() {
		for i := range c.srvs {
			c.Crash(i)
		}
	})
	c.WaitReady()
	return c
}

// Start starts server i (again), on its ports and store of the first
// start, and lets its connections through.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	opts := c.opts[i]
	c.mu.Lock()
	if c.clientPorts[i] != 0 {
		opts.Port, opts.Cluster.Port = c.clientPorts[i], c.clusterPorts[i]
	}
	c.mu.Unlock()
	c.srvs[i] = natstest.RunServer(&opts)
	c.mu.Lock()
	c.clientPorts[i] = c.srvs[i].Addr().(*net.TCPAddr).Port
	c.clusterPorts[i] = c.srvs[i].ClusterAddr().Port
	c.mu.Unlock()
	for _, p := range c.proxies(i) {
		p.resume(c.t)
	}
}

// addr is 127.0.0.1 and ports[i].
func (c *Cluster) addr(ports []int, i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i]))
}

// proxies are the proxies of server i's connections: its clients', its
// routes to the others and theirs to it.
func (c *Cluster) proxies(i int) []*proxy {
	ps := []*proxy{c.clients[i]}
	for j := range c.routes {
		ps = append(ps, c.routes[i][j])
		if j != i {
			ps = append(ps, c.routes[j][i])
		}
	}
	return ps
}

// Crash takes server i away as a dead machine goes: every connection to
// or from it is cut, then it is shut down (its leaders' stepping down
// reaches no one) and waited for. Crashing a stopped server does nothing.
func (c *Cluster) Crash(i int) {
	for _, p := range c.proxies(i) {
		p.cut()
	}
	if s := c.srvs[i]; s != nil {
		s.Shutdown()
		s.WaitForShutdown()
		c.srvs[i] = nil
	}
}

// Server is server i, nil while it is down.
func (c *Cluster) Server(i int) *server.Server { return c.srvs[i] }

// ServerName is the name of server i.
func (c *Cluster) ServerName(i int) string { return c.opts[i].ServerName }

// Index is the index of the server named name, -1 if none.
func (c *Cluster) Index(name string) int {
	for i, o := range c.opts {
		if o.ServerName == name {
			return i
		}
	}
	return -1
}

// URL is the client URL of server i (its proxy's), the same across
// restarts.
func (c *Cluster) URL(i int) string { return "nats://" + c.clients[i].addr }

// URLs is every server's client URL, comma-separated, as a client of the
// whole cluster is given them.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.opts))
	for i := range urls {
		urls[i] = c.URL(i)
	}
	return strings.Join(urls, ",")
}

// IndexOfURL is the index of the server whose client URL is u, -1 if
// none.
func (c *Cluster) IndexOfURL(u string) int {
	for i := range c.opts {
		if strings.TrimSuffix(u, "/") == c.URL(i) {
			return i
		}
	}
	return -1
}

// WaitReady waits until a meta leader sees every server as a peer and
// every running server is current.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	Poll(c.t, 6*Timeout, "the JetStream cluster to be ready", func() string {
		var leader *server.Server
		for _, s := range c.srvs {
			if s != nil && s.JetStreamIsLeader() {
				leader = s
			}
		}
		if leader == nil {
			return "no meta leader"
		}
		if n := len(leader.JetStreamClusterPeers()); n != len(c.srvs) {
			return fmt.Sprintf("%d of %d peers", n, len(c.srvs))
		}
		for i, s := range c.srvs {
			if s != nil && !s.JetStreamIsCurrent() {
				return c.ServerName(i) + " not current"
			}
		}
		return ""
	})
}

// StreamLeader is the index of the server leading stream (of the global
// account), -1 while there is none.
func (c *Cluster) StreamLeader(stream string) int {
	for i, s := range c.srvs {
		if s != nil && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return i
		}
	}
	return -1
}

// ConsumerLeader is the index of the server leading consumer of stream,
// -1 while there is none.
func (c *Cluster) ConsumerLeader(stream, consumer string) int {
	for i, s := range c.srvs {
		if s != nil && s.JetStreamIsConsumerLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream, consumer) {
			return i
		}
	}
	return -1
}

// MoveStreamLeader asks the stream's leader to step down in favour of
// server i (the JetStream API's preferred placement) until i leads it.
func (c *Cluster) MoveStreamLeader(nc *nats.Conn, stream string, i int) {
	c.t.Helper()
	c.moveLeader(nc, "$JS.API.STREAM.LEADER.STEPDOWN."+stream, "stream "+stream, i, func() int { return c.StreamLeader(stream) })
}

// MoveConsumerLeader asks the consumer's leader to step down in favour of
// server i until i leads it.
func (c *Cluster) MoveConsumerLeader(nc *nats.Conn, stream, consumer string, i int) {
	c.t.Helper()
	c.moveLeader(nc, "$JS.API.CONSUMER.LEADER.STEPDOWN."+stream+"."+consumer, "consumer "+consumer, i, func() int { return c.ConsumerLeader(stream, consumer) })
}

func (c *Cluster) moveLeader(nc *nats.Conn, subject, what string, i int, leader func() int) {
	c.t.Helper()
	req, err := json.Marshal(map[string]any{"placement": map[string]string{"preferred": c.ServerName(i)}})
	if err != nil {
		c.t.Fatal(err)
	}
	var asked time.Time
	Poll(c.t, 6*Timeout, fmt.Sprintf("%s to be led by %s", what, c.ServerName(i)), func() string {
		l := leader()
		switch {
		case l == i:
			return ""
		case l < 0:
			return "no leader"
		case time.Since(asked) < time.Second:
			return "asked " + c.ServerName(l) + " to step down"
		}
		asked = time.Now()
		msg, err := nc.Request(subject, req, Timeout)
		if err != nil {
			return err.Error()
		}
		var resp struct {
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if json.Unmarshal(msg.Data, &resp) == nil && resp.Error != nil {
			return "step down: " + resp.Error.Description
		}
		return "asked " + c.ServerName(l) + " to step down"
	})
}
