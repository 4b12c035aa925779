// Package streamtest holds test helpers for code that talks to NATS: a real
// nats-server started in-process (never a mock), connections that close
// with the test, message collectors that wait on channels instead of
// sleeping, and a throw-away TLS PKI.
package streamtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natstest "github.com/nats-io/nats-server/v2/test"
	"github.com/nats-io/nats.go"
)

// Timeout is how long helpers wait for something that should happen at
// once on a local server.
const Timeout = 10 * time.Second

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
	opts := Options()
	opts.JetStream = true
	opts.StoreDir = t.TempDir()
	return RunServer(t, opts)
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

// Next receives one value from ch or fails the test after Timeout.
func Next[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(Timeout):
		t.Fatalf("nothing received after %v", Timeout)
		panic("unreachable")
	}
}

// PKI is a throw-away certificate authority with a server certificate for
// 127.0.0.1/localhost and a client certificate, written as PEM files.
type PKI struct {
	Dir                           string
	CAFile                        string
	ServerCertFile, ServerKeyFile string
	ClientCertFile, ClientKeyFile string
	CAPool                        *x509.CertPool
	ServerCert                    tls.Certificate
}

// NewPKI makes a CA and its server and client certificates in t.TempDir().
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	dir := t.TempDir()
	p := &PKI{Dir: dir, CAPool: x509.NewCertPool()}
	now := time.Now()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "shadoweval test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	p.CAPool.AddCert(caCert)
	p.CAFile = writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)

	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (certFile, keyFile string, pair tls.Certificate) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			DNSNames:     []string{"localhost"},
			IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		certFile = writePEM(t, dir, name+".pem", "CERTIFICATE", der)
		keyFile = writePEM(t, dir, name+"-key.pem", "EC PRIVATE KEY", keyDER)
		pair, err = tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return certFile, keyFile, pair
	}
	p.ServerCertFile, p.ServerKeyFile, p.ServerCert = leaf("server", 2, x509.ExtKeyUsageServerAuth)
	p.ClientCertFile, p.ClientKeyFile, _ = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

// ServerTLS is a server TLS config that requires and verifies client
// certificates signed by the CA.
func (p *PKI) ServerTLS() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{p.ServerCert},
		ClientCAs:    p.CAPool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
