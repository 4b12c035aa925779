package stream

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/shadoweval/shadoweval/testenv"
)

// connectCtx bounds the retries of a Connect that should fail at once; a
// test that hits the deadline instead fails on "gave up".
func connectCtx(t *testing.T) context.Context {
	return testenv.Context(t, testenv.Timeout)
}

// roundTrip proves a connection works end to end.
func roundTrip(t *testing.T, nc *nats.Conn) {
	t.Helper()
	got := testenv.Collect(t, nc, "ping", 1)
	if err := nc.Publish("ping", []byte("pong")); err != nil {
		t.Fatal(err)
	}
	if m := testenv.Next(t, got); string(m.Data) != "pong" {
		t.Fatalf("got %q", m.Data)
	}
}

// connectOK connects with opt, failing the test otherwise, proves the
// connection works end to end and closes it when the test ends.
func connectOK(t *testing.T, opt ConnOptions) *nats.Conn {
	t.Helper()
	nc, err := Connect(connectCtx(t), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	roundTrip(t, nc)
	return nc
}

// secretFile writes data, mode 0600, to name in a directory of its own.
func secretFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := testenv.WriteFile(t, t.TempDir(), name, data)
	return path
}

// wantPermanentErr checks that Connect failed at once, without retrying
// until the deadline, and that no secret leaked into the error.
func wantPermanentErr(t *testing.T, name string, err error, secrets ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: connected", name)
	}
	if strings.Contains(err.Error(), "gave up") {
		t.Fatalf("%s: retried a permanent error until the deadline: %v", name, err)
	}
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("%s: error leaks secret %q: %v", name, s, err)
		}
	}
}

func TestConnectUserPassword(t *testing.T) {
	const user, pass, wrong = "scorer", "correct-horse-battery", "Tr0ub4dor&3-wrong"
	opts := testenv.Options()
	opts.Username, opts.Password = user, pass
	s := testenv.RunServer(t, opts)
	url := s.ClientURL()

	connectOK(t, ConnOptions{URL: url, User: user, Password: pass, Name: "shadoweval-test"})

	hostPort := strings.TrimPrefix(url, "nats://")
	for _, tc := range []struct {
		name string
		opt  ConnOptions
	}{
		{"wrong password", ConnOptions{URL: url, User: user, Password: wrong}},
		{"wrong password in URL", ConnOptions{URL: "nats://" + user + ":" + wrong + "@" + hostPort}},
		{"no credentials", ConnOptions{URL: url}},
	} {
		_, err := Connect(connectCtx(t), tc.opt)
		wantPermanentErr(t, tc.name, err, wrong, pass)
		if !errors.Is(err, nats.ErrAuthorization) {
			t.Errorf("%s: want errors.Is(err, nats.ErrAuthorization), got %v", tc.name, err)
		}
	}
	// Credentials in the URL work too.
	connectOK(t, ConnOptions{URL: "nats://" + user + ":" + pass + "@" + hostPort})
}

func TestConnectToken(t *testing.T) {
	const token, wrong = "s3cr3t-t0ken-value", "not-the-t0ken"
	opts := testenv.Options()
	opts.Authorization = token
	s := testenv.RunServer(t, opts)
	connectOK(t, ConnOptions{URL: s.ClientURL(), Token: token})
	_, err := Connect(connectCtx(t), ConnOptions{URL: s.ClientURL(), Token: wrong})
	wantPermanentErr(t, "wrong token", err, wrong, token)
	_, err = Connect(connectCtx(t), ConnOptions{URL: "nats://" + wrong + "@" + strings.TrimPrefix(s.ClientURL(), "nats://")})
	wantPermanentErr(t, "wrong token in URL", err, wrong, token)
}

func TestConnectOptionErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := secretFile(t, "junk.pem", []byte("not a certificate"))
	for _, tc := range []struct {
		name string
		opt  ConnOptions
	}{
		{"two auth methods", ConnOptions{User: "u", Password: "pw-secret", Token: "tok-secret"}},
		{"cert without key", ConnOptions{TLSCertFile: notPEM}},
		{"missing CA file", ConnOptions{TLSCAFile: filepath.Join(dir, "nope.pem")}},
		{"bad CA file", ConnOptions{TLSCAFile: notPEM}},
		{"missing seed file", ConnOptions{NKeySeedFile: filepath.Join(dir, "nope.nk")}},
		{"bad seed file", ConnOptions{NKeySeedFile: notPEM}},
	} {
		_, err := Connect(connectCtx(t), tc.opt)
		wantPermanentErr(t, tc.name, err, "pw-secret", "tok-secret")
	}
}

// With no server, Connect retries until ctx is done and says so.
func TestConnectRetriesUntilContextDone(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = Connect(ctx, ConnOptions{
		URL:           "nats://u:pw-in-url@127.0.0.1:" + strconv.Itoa(port),
		ReconnectWait: 20 * time.Millisecond,
	})
	if err == nil || !strings.Contains(err.Error(), "gave up") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a gave-up error, got %v", err)
	}
	if strings.Contains(err.Error(), "pw-in-url") {
		t.Fatalf("error leaks the URL password: %v", err)
	}
}

// The server starts while Connect is retrying: Connect waits for it.
func TestConnectWaitsForServer(t *testing.T) {
	opts := testenv.Options()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	ctx := connectCtx(t)
	go func() {
		nc, err := Connect(ctx, ConnOptions{URL: "nats://127.0.0.1:" + strconv.Itoa(opts.Port), ReconnectWait: 10 * time.Millisecond})
		done <- result{nc, err}
	}()
	testenv.RunServer(t, opts)
	r := testenv.Next(t, done)
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.nc.Close()
	roundTrip(t, r.nc)
}

func TestConnectCallbacksOnServerRestart(t *testing.T) {
	opts := testenv.Options()
	s := testenv.RunServer(t, opts)
	opts.Port = s.Addr().(*net.TCPAddr).Port
	disconnected := make(chan struct{}, 4)
	reconnected := make(chan struct{}, 4)
	closed := make(chan struct{})
	nc, err := Connect(connectCtx(t), ConnOptions{
		URL:           s.ClientURL(),
		ReconnectWait: 10 * time.Millisecond, MaxReconnectWait: 50 * time.Millisecond,
		OnDisconnect: func(error) { disconnected <- struct{}{} },
		OnReconnect:  func() { reconnected <- struct{}{} },
		OnClosed:     func() { close(closed) },
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Shutdown()
	s.WaitForShutdown()
	testenv.Next(t, disconnected)
	testenv.RunServer(t, opts)
	testenv.Next(t, reconnected)
	if !nc.IsConnected() {
		t.Fatal("not connected after OnReconnect")
	}
	roundTrip(t, nc)
	nc.Close()
	testenv.Next(t, closed)
}

func TestConnectTLS(t *testing.T) {
	pki, otherPKI := testenv.NewPKI(t), testenv.NewPKI(t)
	opts := testenv.Options()
	opts.TLSConfig = pki.ServerTLS()
	opts.TLSVerify = true
	opts.TLSTimeout = 5
	s := testenv.RunServer(t, opts)
	url := "nats://" + s.Addr().String()

	nc := connectOK(t, ConnOptions{
		URL: url, TLSCAFile: pki.CAFile, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile,
	})
	if _, err := nc.TLSConnectionState(); err != nil {
		t.Fatalf("not TLS: %v", err)
	}

	for _, tc := range []struct {
		name string
		opt  ConnOptions
	}{
		{"no client certificate", ConnOptions{URL: url, TLSCAFile: pki.CAFile}},
		{"unknown CA", ConnOptions{URL: url, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile}},
		{"other CA", ConnOptions{URL: url, TLSCAFile: otherPKI.CAFile, TLSCertFile: pki.ClientCertFile, TLSKeyFile: pki.ClientKeyFile}},
		{"client cert of another CA", ConnOptions{URL: url, TLSCAFile: pki.CAFile, TLSCertFile: otherPKI.ClientCertFile, TLSKeyFile: otherPKI.ClientKeyFile}},
		{"no TLS at all", ConnOptions{URL: url}},
	} {
		start := time.Now()
		_, err := Connect(connectCtx(t), tc.opt)
		t.Logf("%s: %v (%v)", tc.name, err, time.Since(start))
		wantPermanentErr(t, tc.name, err)
	}
}

func TestConnectNKey(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := secretFile(t, "user.nk", seed)
	opts := testenv.Options()
	opts.Nkeys = []*server.NkeyUser{{Nkey: pub}}
	s := testenv.RunServer(t, opts)

	connectOK(t, ConnOptions{URL: s.ClientURL(), NKeySeedFile: seedFile})

	// Another user's key is refused, and its seed is not in the error.
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	otherFile := secretFile(t, "other.nk", otherSeed)
	_, err = Connect(connectCtx(t), ConnOptions{URL: s.ClientURL(), NKeySeedFile: otherFile})
	wantPermanentErr(t, "unknown nkey", err, string(otherSeed), string(seed))
}

// A credentials file needs an operator-mode server: operator → account →
// user JWTs, with the account served from memory.
func TestConnectCredsFile(t *testing.T) {
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	opClaims := jwt.NewOperatorClaims(opPub)
	opJWT, err := opClaims.Encode(op)
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
	uc := jwt.NewUserClaims(userPub)
	uc.IssuerAccount = accPub
	userJWT, err := uc.Encode(acc)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := jwt.FormatUserConfig(userJWT, userSeed)
	if err != nil {
		t.Fatal(err)
	}
	credsFile := secretFile(t, "user.creds", creds)

	resolver := &server.MemAccResolver{}
	if err := resolver.Store(accPub, accJWT); err != nil {
		t.Fatal(err)
	}
	opts := testenv.Options()
	opts.TrustedOperators = []*jwt.OperatorClaims{opDecoded}
	opts.AccountResolver = resolver
	opts.NoSystemAccount = true
	s := testenv.RunServer(t, opts)

	connectOK(t, ConnOptions{URL: s.ClientURL(), CredsFile: credsFile})

	// A user of an account the server does not know is refused.
	stranger, _ := nkeys.CreateAccount()
	strangerPub, _ := stranger.PublicKey()
	uc2 := jwt.NewUserClaims(userPub)
	uc2.IssuerAccount = strangerPub
	badJWT, _ := uc2.Encode(stranger)
	badCreds, _ := jwt.FormatUserConfig(badJWT, userSeed)
	badFile := secretFile(t, "bad.creds", badCreds)
	_, err = Connect(connectCtx(t), ConnOptions{URL: s.ClientURL(), CredsFile: badFile})
	wantPermanentErr(t, "unknown account", err, string(userSeed))
}
