package testenv

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natstest "github.com/nats-io/nats-server/v2/test"
	"github.com/nats-io/nats.go"
)

// Cluster is a JetStream cluster of nats-servers in this process, formed
// as nats-server's own tests form one (createJetStreamClusterExplicit):
// every server has its name, its store in t.TempDir(), its cluster port
// and a route to every server's cluster port, itself included, so each
// expects the whole cluster from the start. A server can be shut down and
// started again on the same ports and store, as a node that dies and comes
// back.
type Cluster struct {
	t     testing.TB
	Name  string
	opts  []server.Options
	srvs  []*server.Server
	ports []int // client ports, fixed on the first start
}

// RunCluster starts a cluster of n JetStream servers and waits until it
// has a meta leader and every server is current; it shuts down when the
// test ends.
func RunCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t, Name: "C" + strconv.Itoa(n), opts: make([]server.Options, n), srvs: make([]*server.Server, n), ports: make([]int, n)}
	clusterPorts := freePorts(t, n)
	var routes []*url.URL
	for _, p := range clusterPorts {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p))})
	}
	for i := range n {
		opts := jetStreamOptions(t.TempDir())
		opts.ServerName = fmt.Sprintf("S-%d", i+1)
		opts.Cluster.Name = c.Name
		opts.Cluster.Host = "127.0.0.1"
		opts.Cluster.Port = clusterPorts[i]
		opts.Routes = routes
		c.opts[i] = opts
	}
	for i := range n {
		c.Start(i)
	}
	t.Cleanup(func() {
		for i := range c.srvs {
			c.Shutdown(i)
		}
	})
	c.WaitReady()
	return c
}

// freePorts reserves n free TCP ports on 127.0.0.1: listened on, then let
// go, for servers that need each other's ports before they start.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// Start starts server i (again), on its ports and store of the first start.
func (c *Cluster) Start(i int) {
	c.t.Helper()
	opts := c.opts[i]
	if c.ports[i] != 0 {
		opts.Port = c.ports[i]
	}
	c.srvs[i] = natstest.RunServer(&opts)
	c.ports[i] = c.srvs[i].Addr().(*net.TCPAddr).Port
}

// Shutdown stops server i and waits until it is down; stopping a stopped
// server does nothing.
func (c *Cluster) Shutdown(i int) {
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

// URL is the client URL of server i, the same across restarts.
func (c *Cluster) URL(i int) string { return "nats://127.0.0.1:" + strconv.Itoa(c.ports[i]) }

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
