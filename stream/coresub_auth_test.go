package stream

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/shadoweval/shadoweval/stream/streamtest"
)

// The authentication and TLS tests of Connect (conn_test.go), repeated for
// CoreSubscribe, which does its own handshake: every way in that Connect
// accepts must work, and every refusal must come back at once, without a
// secret in the error.

// coreAuthCase is one way in: ok cases must deliver a message, the others
// must fail at once (and with is, when set, in their error chain).
type coreAuthCase struct {
	name string
	opt  ConnOptions
	ok   bool
	is   error
	// tls: the subscription's connection must (true) or must not (false)
	// be TLS; checked for ok cases.
	tls bool
}

// runCoreAuthCases runs each case as a subtest; secrets must appear in no
// error.
func runCoreAuthCases(t *testing.T, cases []coreAuthCase, secrets ...string) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ok {
				sub := coreAuthDelivers(t, tc.opt)
				_, isTLS := sub.conn.Load().Conn.(*tls.Conn)
				if isTLS != tc.tls {
					t.Fatalf("TLS connection: %v, want %v", isTLS, tc.tls)
				}
				return
			}
			start := time.Now()
			sub, err := CoreSubscribe(connectCtx(t), tc.opt, map[Kind]string{KindTrace: "auth.>"}, 1, 0, func(*Message) {})
			if sub != nil {
				t.Cleanup(func() { sub.Unsubscribe() })
			}
			t.Logf("%v (%v)", err, time.Since(start))
			wantPermanentErr(t, tc.name, err, secrets...)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("want errors.Is(err, %v), got %v", tc.is, err)
			}
		})
	}
}

// coreAuthDelivers subscribes with opt and proves that a message published
// by a separate nats.go connection (Connect with the same options) reaches
// the handler.
func coreAuthDelivers(t *testing.T, opt ConnOptions) *CoreSubscription {
	t.Helper()
	got := make(chan *Message, 4)
	sub := coreSubscribe(t, opt, map[Kind]string{KindTrace: "auth.>"}, 1, 0, func(m *Message) { c := *m; got <- &c })
	pub, err := Connect(connectCtx(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := pub.Publish("auth.delivered", []byte("through")); err != nil {
		t.Fatal(err)
	}
	m := streamtest.Next(t, got)
	if m.Kind != KindTrace || m.Subject != "auth.delivered" || string(m.Data) != "through" {
		t.Fatalf("got kind %s subject %s data %q", m.Kind, m.Subject, m.Data)
	}
	return sub
}

func TestCoreSubscribeAuthUserPassword(t *testing.T) {
	const user, pass, wrong = "scorer", "correct-horse-battery", "Tr0ub4dor&3-wrong"
	opts := streamtest.Options()
	opts.Username, opts.Password = user, pass
	s := streamtest.RunServer(t, opts)
	url := s.ClientURL()
	hostPort := strings.TrimPrefix(url, "nats://")
	runCoreAuthCases(t, []coreAuthCase{
		{name: "options", opt: ConnOptions{URL: url, User: user, Password: pass, Name: "shadoweval-test"}, ok: true},
		{name: "in URL", opt: ConnOptions{URL: "nats://" + user + ":" + pass + "@" + hostPort}, ok: true},
		{name: "wrong password", opt: ConnOptions{URL: url, User: user, Password: wrong}, is: nats.ErrAuthorization},
		{name: "wrong user", opt: ConnOptions{URL: url, User: "other", Password: pass}, is: nats.ErrAuthorization},
		{name: "wrong password in URL", opt: ConnOptions{URL: "nats://" + user + ":" + wrong + "@" + hostPort}, is: nats.ErrAuthorization},
		{name: "no credentials", opt: ConnOptions{URL: url}, is: nats.ErrAuthorization},
	}, wrong, pass)
}

func TestCoreSubscribeAuthToken(t *testing.T) {
	const token, wrong = "s3cr3t-t0ken-value", "not-the-t0ken"
	opts := streamtest.Options()
	opts.Authorization = token
	s := streamtest.RunServer(t, opts)
	url := s.ClientURL()
	hostPort := strings.TrimPrefix(url, "nats://")
	runCoreAuthCases(t, []coreAuthCase{
		{name: "options", opt: ConnOptions{URL: url, Token: token}, ok: true},
		{name: "in URL", opt: ConnOptions{URL: "nats://" + token + "@" + hostPort}, ok: true},
		{name: "wrong token", opt: ConnOptions{URL: url, Token: wrong}, is: nats.ErrAuthorization},
		{name: "wrong token in URL", opt: ConnOptions{URL: "nats://" + wrong + "@" + hostPort}, is: nats.ErrAuthorization},
		{name: "no token", opt: ConnOptions{URL: url}, is: nats.ErrAuthorization},
	}, wrong, token)
}

// TestCoreSubscribeOptionErrors: options that cannot work are refused
// before any dial.
func TestCoreSubscribeOptionErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCoreAuthCases(t, []coreAuthCase{
		{name: "two auth methods", opt: ConnOptions{User: "u", Password: "pw-secret", Token: "tok-secret"}},
		{name: "cert without key", opt: ConnOptions{TLSCertFile: notPEM}},
		{name: "missing CA file", opt: ConnOptions{TLSCAFile: filepath.Join(dir, "nope.pem")}},
		{name: "bad CA file", opt: ConnOptions{TLSCAFile: notPEM}},
		{name: "missing seed file", opt: ConnOptions{NKeySeedFile: filepath.Join(dir, "nope.nk")}},
		{name: "bad seed file", opt: ConnOptions{NKeySeedFile: notPEM}},
	}, "pw-secret", "tok-secret")
}

func TestCoreSubscribeAuthTLS(t *testing.T) {
	pki, otherPKI := streamtest.NewPKI(t), streamtest.NewPKI(t)

	t.Run("verify", func(t *testing.T) {
		// The server requires a client certificate of its CA.
		opts := streamtest.Options()
		opts.TLSConfig = pki.ServerTLS()
		opts.TLSVerify = true
		opts.TLSTimeout = 5
		s := streamtest.RunServer(t, opts)
		addr := s.Addr().String()
		url := "nats://" + addr
		runCoreAuthCases(t, []coreAuthCase{
			{name: "client cert", opt: ConnOptions{URL: url, TLSCAFile: pki.CAFile, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile}, ok: true, tls: true},
			{name: "client cert tls URL", opt: ConnOptions{URL: "tls://" + addr, TLSCAFile: pki.CAFile, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile}, ok: true, tls: true},
			{name: "no client certificate", opt: ConnOptions{URL: url, TLSCAFile: pki.CAFile}},
			{name: "unknown CA", opt: ConnOptions{URL: url, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile}},
			{name: "other CA", opt: ConnOptions{URL: url, TLSCAFile: otherPKI.CAFile, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile}},
			{name: "client cert of another CA", opt: ConnOptions{URL: url, TLSCAFile: pki.CAFile, TLSCertFile: otherPKI.ClientCertFile, TLSKeyFile: otherPKI.ClientKeyFile}},
			{name: "no TLS at all", opt: ConnOptions{URL: url}},
		})
	})

	t.Run("server only", func(t *testing.T) {
		// TLS required, no client certificate asked for: the CA file is
		// enough.
		opts := streamtest.Options()
		opts.TLSConfig = pki.ServerTLS()
		opts.TLSConfig.ClientAuth = tls.NoClientCert
		opts.TLSTimeout = 5
		s := streamtest.RunServer(t, opts)
		addr := s.Addr().String()
		runCoreAuthCases(t, []coreAuthCase{
			{name: "CA file", opt: ConnOptions{URL: "nats://" + addr, TLSCAFile: pki.CAFile}, ok: true, tls: true},
			{name: "CA file tls URL", opt: ConnOptions{URL: "tls://" + addr, TLSCAFile: pki.CAFile}, ok: true, tls: true},
			{name: "tls URL without CA", opt: ConnOptions{URL: "tls://" + addr}},
			{name: "other CA", opt: ConnOptions{URL: "nats://" + addr, TLSCAFile: otherPKI.CAFile}},
		})
	})

	t.Run("optional", func(t *testing.T) {
		// TLS available but not required: the client's choice decides.
		opts := streamtest.Options()
		opts.TLSConfig = pki.ServerTLS()
		opts.TLSConfig.ClientAuth = tls.NoClientCert
		opts.TLSTimeout = 5
		opts.AllowNonTLS = true
		s := streamtest.RunServer(t, opts)
		addr := s.Addr().String()
		runCoreAuthCases(t, []coreAuthCase{
			{name: "plain", opt: ConnOptions{URL: "nats://" + addr}, ok: true, tls: false},
			{name: "tls URL", opt: ConnOptions{URL: "tls://" + addr, TLSCAFile: pki.CAFile}, ok: true, tls: true},
			{name: "CA file", opt: ConnOptions{URL: "nats://" + addr, TLSCAFile: pki.CAFile}, ok: true, tls: true},
		})
	})

	t.Run("server without TLS", func(t *testing.T) {
		s := streamtest.RunBasic(t)
		addr := s.Addr().String()
		runCoreAuthCases(t, []coreAuthCase{
			{name: "tls URL", opt: ConnOptions{URL: "tls://" + addr}, is: nats.ErrSecureConnWanted},
			{name: "CA file", opt: ConnOptions{URL: "nats://" + addr, TLSCAFile: pki.CAFile}, is: nats.ErrSecureConnWanted},
		})
	})
}

func TestCoreSubscribeAuthNKey(t *testing.T) {
	writeSeed := func(name string) (pub string, seed []byte, file string) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		pub, _ = kp.PublicKey()
		seed, _ = kp.Seed()
		file = filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(file, seed, 0o600); err != nil {
			t.Fatal(err)
		}
		return pub, seed, file
	}
	pub, seed, seedFile := writeSeed("user.nk")
	_, otherSeed, otherFile := writeSeed("other.nk")
	opts := streamtest.Options()
	opts.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	s := streamtest.RunServer(t, opts)
	runCoreAuthCases(t, []coreAuthCase{
		{name: "seed file", opt: ConnOptions{URL: s.ClientURL(), NKeySeedFile: seedFile}, ok: true},
		{name: "unknown nkey", opt: ConnOptions{URL: s.ClientURL(), NKeySeedFile: otherFile}, is: nats.ErrAuthorization},
		{name: "no nkey", opt: ConnOptions{URL: s.ClientURL()}, is: nats.ErrAuthorization},
	}, string(seed), string(otherSeed))
}

// TestCoreSubscribeAuthCredsFile: an operator-mode server (operator →
// account → user JWTs, the account served from memory), as
// TestConnectCredsFile.
func TestCoreSubscribeAuthCredsFile(t *testing.T) {
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	opJWT, err := jwt.NewOperatorClaims(opPub).Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	opDecoded, err := jwt.DecodeOperatorClaims(opJWT)
	if err != nil {
		t.Fatal(err)
	}
	acc, _ := nkeys.CreateAccount()
	accPub, _ := acc.PublicKey()
	accJWT, err := jwt.NewAccountClaims(accPub).Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	user, _ := nkeys.CreateUser()
	userPub, _ := user.PublicKey()
	userSeed, _ := user.Seed()
	writeCreds := func(name string, issuer nkeys.KeyPair) string {
		issuerPub, _ := issuer.PublicKey()
		uc := jwt.NewUserClaims(userPub)
		uc.IssuerAccount = issuerPub
		userJWT, err := uc.Encode(issuer)
		if err != nil {
			t.Fatal(err)
		}
		creds, err := jwt.FormatUserConfig(userJWT, userSeed)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(file, creds, 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	credsFile := writeCreds("user.creds", acc)
	// A user of an account the server does not know.
	stranger, _ := nkeys.CreateAccount()
	badFile := writeCreds("bad.creds", stranger)

	resolver := &server.MemAccResolver{}
	if err := resolver.Store(accPub, accJWT); err != nil {
		t.Fatal(err)
	}
	opts := streamtest.Options()
	opts.TrustedOperators = []*jwt.OperatorClaims{opDecoded}
	opts.AccountResolver = resolver
	opts.NoSystemAccount = true
	s := streamtest.RunServer(t, opts)
	runCoreAuthCases(t, []coreAuthCase{
		{name: "creds file", opt: ConnOptions{URL: s.ClientURL(), CredsFile: credsFile}, ok: true},
		{name: "unknown account", opt: ConnOptions{URL: s.ClientURL(), CredsFile: badFile}, is: nats.ErrAuthorization},
		{name: "no creds", opt: ConnOptions{URL: s.ClientURL()}, is: nats.ErrAuthorization},
	}, string(userSeed))
}

// With no server, CoreSubscribe retries until ctx is done and says so.
func TestCoreSubscribeRetriesUntilContextDone(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	sub, err := CoreSubscribe(ctx, ConnOptions{
		URL:           "nats://u:pw-in-url@127.0.0.1:" + strconv.Itoa(port),
		ReconnectWait: 20 * time.Millisecond,
	}, map[Kind]string{KindTrace: "rag.trace.>"}, 1, 0, func(*Message) {})
	if sub != nil {
		sub.Unsubscribe()
	}
	if err == nil || !strings.Contains(err.Error(), "gave up") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a gave-up error, got %v", err)
	}
	if strings.Contains(err.Error(), "pw-in-url") {
		t.Fatalf("error leaks the URL password: %v", err)
	}
}

// The server starts while CoreSubscribe is retrying: CoreSubscribe waits
// for it, and is subscribed when it returns.
func TestCoreSubscribeWaitsForServer(t *testing.T) {
	opts := streamtest.Options()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	type result struct {
		sub *CoreSubscription
		err error
	}
	done := make(chan result, 1)
	got := make(chan string, 4)
	url := "nats://127.0.0.1:" + strconv.Itoa(opts.Port)
	ctx := connectCtx(t)
	go func() {
		sub, err := CoreSubscribe(ctx, ConnOptions{URL: url, ReconnectWait: 10 * time.Millisecond},
			map[Kind]string{KindAnswer: "rag.answer.>"}, 1, 0, func(m *Message) { got <- string(m.Data) })
		done <- result{sub, err}
	}()
	s := streamtest.RunServer(t, opts)
	r := streamtest.Next(t, done)
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.sub.Unsubscribe() })
	pub := streamtest.Connect(t, s.ClientURL())
	if err := pub.Publish("rag.answer.live", []byte("late server")); err != nil {
		t.Fatal(err)
	}
	if d := streamtest.Next(t, got); d != "late server" {
		t.Fatalf("got %q", d)
	}
}
