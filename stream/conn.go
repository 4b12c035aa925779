package stream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnOptions configures a client connection. At most one of user/password,
// token, NKey seed file and credentials file may be set (credentials in the
// URL count as user/password or token).
type ConnOptions struct {
	// URL is one server URL or a comma-separated list; empty means
	// nats.DefaultURL.
	URL string
	// Name identifies the connection on the server (monitoring, logs).
	Name string

	User     string
	Password string
	Token    string
	// NKeySeedFile holds an NKey user seed (SU…).
	NKeySeedFile string
	// CredsFile is a decorated JWT + seed credentials file (operator mode).
	CredsFile string

	// TLSCAFile verifies the server; TLSCertFile/TLSKeyFile present a
	// client certificate. Any of them turns TLS on.
	TLSCAFile   string
	TLSCertFile string
	TLSKeyFile  string

	// ConnectTimeout bounds one dial + handshake; 0 means 2 s.
	ConnectTimeout time.Duration
	// ReconnectWait is the first back-off step; it doubles on every failed
	// attempt up to MaxReconnectWait, with ±20 % jitter. 0 means 250 ms
	// and 10 s.
	ReconnectWait    time.Duration
	MaxReconnectWait time.Duration
	// PingInterval is how often the connection checks the server with a
	// PING (two unanswered: reconnect); 0 means nats.go's 2 minutes.
	PingInterval time.Duration

	// OnDisconnect runs when the connection is lost (err may be nil on a
	// clean close by the server); the sidecar flips readiness off.
	OnDisconnect func(err error)
	// OnReconnect runs when the connection is back.
	OnReconnect func()
	// OnClosed runs when the connection is closed for good (by Close).
	OnClosed func()
	// OnSlowConsumer runs when a subscription starts dropping messages
	// because its pending limits are reached; nats.go reports it once per
	// episode, not per message (Subscription.Dropped counts messages).
	OnSlowConsumer func(subject string)
	// OnError receives the other asynchronous errors (permission
	// violations, …). Its errors carry no secrets.
	OnError func(err error)
}

// Connect dials NATS with the given options. The connection reconnects
// forever with capped exponential back-off once established. The first
// connection is retried the same way until ctx is done, except for errors
// that retrying cannot fix (authentication, TLS verification, bad options),
// which are returned at once; pass a ctx with a deadline to fail fast.
// Returned errors never contain passwords, tokens or URL credentials.
func Connect(ctx context.Context, opt ConnOptions) (*nats.Conn, error) {
	secrets := opt.secrets()
	natsOpts, err := opt.natsOptions()
	if err != nil {
		return nil, redact(err, secrets)
	}
	servers := opt.URL
	if servers == "" {
		servers = nats.DefaultURL
	}
	var nc *nats.Conn
	err = opt.retry(ctx, func() error {
		var err error
		if nc, err = nats.Connect(servers, natsOpts...); err != nil {
			return fmt.Errorf("nats connect %s: %w", redactURLs(servers), err)
		}
		return nil
	})
	return nc, err
}

// retry calls connect until it succeeds, fails with an error that retrying
// cannot fix, or ctx is done, with the reconnect back-off in between. Its
// error is redacted.
func (opt *ConnOptions) retry(ctx context.Context, connect func() error) error {
	backoff := opt.backoff()
	for attempt := 0; ; attempt++ {
		err := connect()
		if err == nil {
			return nil
		}
		if permanent(err) {
			return redact(err, opt.secrets())
		}
		t := time.NewTimer(backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return redact(fmt.Errorf("%w (gave up: %w)", err, context.Cause(ctx)), opt.secrets())
		case <-t.C:
		}
	}
}

func (opt *ConnOptions) natsOptions() ([]nats.Option, error) {
	auth := 0
	if opt.User != "" || opt.Password != "" {
		auth++
	}
	for _, s := range []string{opt.Token, opt.NKeySeedFile, opt.CredsFile} {
		if s != "" {
			auth++
		}
	}
	if auth > 1 {
		return nil, errors.New("nats: set only one of user/password, token, nkey seed file and credentials file")
	}
	if (opt.TLSCertFile == "") != (opt.TLSKeyFile == "") {
		return nil, errors.New("nats: TLS client certificate and key files go together")
	}
	timeout := opt.ConnectTimeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	o := []nats.Option{
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(opt.backoff()),
		// Keep trying after repeated auth errors: a rotated credentials
		// file is read again on every attempt.
		nats.IgnoreAuthErrorAbort(),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if opt.OnDisconnect != nil {
				opt.OnDisconnect(err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			if opt.OnReconnect != nil {
				opt.OnReconnect()
			}
		}),
		nats.ClosedHandler(func(*nats.Conn) {
			if opt.OnClosed != nil {
				opt.OnClosed()
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrSlowConsumer) && sub != nil {
				if opt.OnSlowConsumer != nil {
					opt.OnSlowConsumer(sub.Subject)
				}
				return
			}
			if opt.OnError != nil {
				opt.OnError(redact(err, opt.secrets()))
			}
		}),
	}
	if opt.Name != "" {
		o = append(o, nats.Name(opt.Name))
	}
	if opt.PingInterval > 0 {
		o = append(o, nats.PingInterval(opt.PingInterval))
	}
	if opt.User != "" || opt.Password != "" {
		o = append(o, nats.UserInfo(opt.User, opt.Password))
	}
	if opt.Token != "" {
		o = append(o, nats.Token(opt.Token))
	}
	if opt.NKeySeedFile != "" {
		nk, err := nats.NkeyOptionFromSeed(opt.NKeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("nats: nkey seed file %s: %w", opt.NKeySeedFile, err)
		}
		o = append(o, nk)
	}
	if opt.CredsFile != "" {
		o = append(o, nats.UserCredentials(opt.CredsFile))
	}
	if opt.TLSCAFile != "" {
		o = append(o, nats.RootCAs(opt.TLSCAFile))
	}
	if opt.TLSCertFile != "" {
		o = append(o, nats.ClientCert(opt.TLSCertFile, opt.TLSKeyFile))
	}
	// Apply the options once here so that unreadable files and bad PEM are
	// reported before any dial, with the file name.
	var check nats.Options
	for _, f := range o {
		if err := f(&check); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// backoff is exponential from ReconnectWait to MaxReconnectWait with ±20 %
// jitter, so a fleet of sidecars does not reconnect in lock-step.
func (opt *ConnOptions) backoff() func(attempts int) time.Duration {
	base, limit := opt.ReconnectWait, opt.MaxReconnectWait
	if base <= 0 {
		base = 250 * time.Millisecond
	}
	if limit <= 0 {
		limit = 10 * time.Second
	}
	if limit < base {
		limit = base
	}
	return func(attempts int) time.Duration {
		d := base
		for i := 1; i < attempts && d < limit; i++ {
			d *= 2
		}
		d = min(d, limit)
		return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	}
}

// secrets lists the strings that must never appear in an error: the
// password, the token and any password or token embedded in the URLs.
func (opt *ConnOptions) secrets() []string {
	var s []string
	for _, v := range []string{opt.Password, opt.Token} {
		if v != "" {
			s = append(s, v)
		}
	}
	for _, raw := range strings.Split(opt.URL, ",") {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.User == nil {
			continue
		}
		if p, ok := u.User.Password(); ok && p != "" {
			s = append(s, p)
		}
		if name := u.User.Username(); name != "" {
			// A user without password in the URL is a token.
			if _, ok := u.User.Password(); !ok {
				s = append(s, name)
			}
		}
	}
	return s
}

// redactURLs drops the user information from a comma-separated URL list.
func redactURLs(list string) string {
	parts := strings.Split(list, ",")
	for i, raw := range parts {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			parts[i] = "<unparsable url>"
			continue
		}
		if u.User != nil {
			u.User = url.User("redacted")
		}
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}

// redactedError carries the scrubbed text of an error. It keeps errors.Is
// working against nats sentinels but, on purpose, has no Unwrap: the
// original text could hold a secret.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string        { return e.msg }
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }

func redact(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, "[REDACTED]")
	}
	return &redactedError{msg: msg, err: err}
}

// permanent reports errors that another attempt cannot fix.
func permanent(err error) bool {
	for _, target := range []error{
		nats.ErrAuthorization, nats.ErrAuthExpired, nats.ErrAuthRevoked,
		nats.ErrAccountAuthExpired, nats.ErrSecureConnRequired,
		nats.ErrSecureConnWanted, nats.ErrNkeysNotSupported,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var (
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
		verify    *tls.CertificateVerificationError
		alert     tls.AlertError
		recordHdr tls.RecordHeaderError
	)
	if errors.As(err, &unknownCA) || errors.As(err, &invalid) ||
		errors.As(err, &hostname) || errors.As(err, &verify) ||
		errors.As(err, &alert) || errors.As(err, &recordHdr) {
		return true
	}
	// A TLS alert from the server (say, "certificate required") reaches
	// the client as a *net.OpError around an unexported type.
	return strings.Contains(err.Error(), "remote error: tls:")
}
