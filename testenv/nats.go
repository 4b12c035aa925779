package testenv

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	natstest "github.com/nats-io/nats-server/v2/test"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options is a copy of the nats-server test defaults on a random port.
func Options() server.Options {
	opts := natstest.DefaultTestOptions
	opts.Port = -1
	return opts
}

// RunServer starts a server with the given options (start from Options())
// and shuts it down when the test ends.
func RunServer(t testing.TB, opts server.Options) *server.Server {
	t.Helper()
	s := natstest.RunServer(&opts)
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// RunBasic starts a plain server on a random port.
func RunBasic(t testing.TB) *server.Server {
	t.Helper()
	return RunServer(t, Options())
}

// RunJetStream starts a server with JetStream stored in t.TempDir().
func RunJetStream(t testing.TB) *server.Server {
	t.Helper()
	return RunServer(t, jetStreamOptions(t.TempDir()))
}

func jetStreamOptions(dir string) server.Options {
	opts := Options()
	opts.JetStream = true
	opts.StoreDir = dir
	return opts
}

// RunConnected starts a plain server and connects to it: the server and
// the connection of most NATS tests.
func RunConnected(t testing.TB, opts ...nats.Option) (*server.Server, *nats.Conn) {
	t.Helper()
	s := RunBasic(t)
	return s, Connect(t, s.ClientURL(), opts...)
}

// RunJetStreamConn starts a JetStream server (RunJetStream) and connects
// to it (ConnectJetStream).
func RunJetStreamConn(t testing.TB, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return ConnectJetStream(t, RunJetStream(t).ClientURL(), opts...)
}

// ConnectJetStream connects to url (Connect) and returns the connection
// and its JetStream API.
func ConnectJetStream(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc := Connect(t, url, opts...)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// Connect connects to url and closes the connection when the test ends.
func Connect(t testing.TB, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Collect subscribes to subject and returns a channel receiving every
// message; the channel holds n messages, so a test expecting up to n
// messages may read them late. The subscription is flushed to the
// server before Collect returns, so a publish that follows is seen.
func Collect(t testing.TB, nc *nats.Conn, subject string, n int) <-chan *nats.Msg {
	t.Helper()
	ch := make(chan *nats.Msg, n)
	sub, err := nc.ChanSubscribe(subject, ch)
	if err != nil {
		t.Fatalf("subscribe %s: %v", subject, err)
	}
	if err := nc.FlushTimeout(Timeout); err != nil {
		t.Fatalf("flush: %v", err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return ch
}

// Publish publishes data on subject and flushes, so that the server has
// it when Publish returns.
func Publish(t testing.TB, nc *nats.Conn, subject string, data []byte) {
	t.Helper()
	if err := nc.Publish(subject, data); err != nil {
		t.Fatalf("publish %s: %v", subject, err)
	}
	Flush(t, nc)
}

// Flush flushes nc, failing the test when the server does not answer
// within Timeout.
func Flush(t testing.TB, nc *nats.Conn) {
	t.Helper()
	if err := nc.FlushTimeout(Timeout); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

// Restartable is a JetStream server that can be stopped and started again
// on the same port and store directory, while its clients wait.
type Restartable struct {
	t    testing.TB
	dir  string
	port int
	srv  *server.Server
}

// RunRestartable starts a Restartable server; it stops when the test ends.
func RunRestartable(t testing.TB) *Restartable {
	t.Helper()
	s := &Restartable{t: t, dir: t.TempDir(), port: -1}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Start starts the server (again), on the port of its first start.
func (s *Restartable) Start() {
	s.t.Helper()
	opts := jetStreamOptions(s.dir)
	opts.Port = s.port
	s.srv = natstest.RunServer(&opts)
	s.port = s.srv.Addr().(*net.TCPAddr).Port
}

// Stop shuts the server down and waits until it is down; stopping a
// stopped server does nothing.
func (s *Restartable) Stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

// URL is the server's client URL, the same across restarts.
func (s *Restartable) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

// CreateStream creates a stream as a test's set-up, asking again when an
// answer does not come: a JetStream API request sent while the cluster's
// meta leader changes is lost, and its context alone would wait it out.
// Creating a stream again with the same configuration answers as the
// first creation did.
func CreateStream(t testing.TB, js jetstream.JetStream, cfg jetstream.StreamConfig) jetstream.Stream {
	t.Helper()
	var s jetstream.Stream
	Poll(t, 6*Timeout, "stream "+cfg.Name+" to be created", func() string {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout/2)
		defer cancel()
		var err error
		if s, err = js.CreateStream(ctx, cfg); err != nil {
			return err.Error()
		}
		return ""
	})
	return s
}
