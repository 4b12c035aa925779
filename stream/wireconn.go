package stream

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// serverInfo is the part of the server's INFO that a subscriber needs.
type serverInfo struct {
	TLSRequired  bool     `json:"tls_required"`
	TLSAvailable bool     `json:"tls_available"`
	Nonce        string   `json:"nonce"`
	MaxPayload   int      `json:"max_payload"`
	Headers      bool     `json:"headers"`
	ConnectURLs  []string `json:"connect_urls"`
	LameDuck     bool     `json:"ldm"`
}

// wireConn is one established connection: handshake done, the server's
// first PONG read. r holds what the server sent after that PONG.
type wireConn struct {
	net.Conn
	r    *bufio.Reader
	info serverInfo
}

// dialWire connects to server and completes the core NATS handshake with
// the authentication nats.go would use for the same options (o is
// ConnOptions.natsOptions applied): user and password or token from the
// URL or the options, NKey or JWT signatures of the server's nonce, TLS
// when the URL, the options or the server ask for it. subs are the SUB
// lines to send with CONNECT: the server has them when dialWire returns.
func dialWire(ctx context.Context, server *url.URL, o *nats.Options, subs []byte) (*wireConn, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host := server.Host
	if server.Port() == "" {
		host = net.JoinHostPort(server.Hostname(), "4222")
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	_ = raw.SetDeadline(deadline)
	c, err := handshakeWire(raw, server, o, subs)
	if err != nil {
		raw.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

func handshakeWire(raw net.Conn, server *url.URL, o *nats.Options, subs []byte) (*wireConn, error) {
	c := &wireConn{Conn: raw, r: bufio.NewReaderSize(raw, 32<<10)}
	line, err := readLine(c.r)
	if err != nil {
		return nil, fmt.Errorf("waiting for INFO: %w", err)
	}
	info, ok := strings.CutPrefix(line, "INFO ")
	if !ok {
		return nil, protocolErr("expected INFO, got %.40q", line)
	}
	if err := json.Unmarshal([]byte(info), &c.info); err != nil {
		return nil, protocolErr("INFO: %v", err)
	}
	if c.info.MaxPayload <= 0 {
		c.info.MaxPayload = 1 << 20
	}
	secure := o.Secure || server.Scheme == "tls"
	if secure && !c.info.TLSRequired && !c.info.TLSAvailable {
		return nil, nats.ErrSecureConnWanted
	}
	if c.info.TLSRequired {
		// nats.go upgrades when the server asks, with the system roots
		// unless the options name others.
		secure = true
	}
	if secure {
		conf := &tls.Config{MinVersion: tls.VersionTLS12}
		if o.TLSConfig != nil {
			conf = o.TLSConfig.Clone()
		}
		if o.TLSCertCB != nil {
			cert, err := o.TLSCertCB()
			if err != nil {
				return nil, err
			}
			conf.Certificates = []tls.Certificate{cert}
		}
		if o.RootCAsCB != nil {
			if conf.RootCAs, err = o.RootCAsCB(); err != nil {
				return nil, err
			}
		}
		if conf.ServerName == "" {
			conf.ServerName = server.Hostname()
		}
		tc := tls.Client(raw, conf)
		if err := tc.Handshake(); err != nil {
			return nil, fmt.Errorf("%w: %w", nats.ErrTLS, err)
		}
		c.Conn = tc
		c.r = bufio.NewReaderSize(tc, 32<<10)
	}
	connect, err := connectLine(server, o, c.info, secure)
	if err != nil {
		return nil, err
	}
	msg := append(append(connect, subs...), "PING\r\n"...)
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	for {
		line, err := readLine(c.r)
		if err != nil {
			return nil, fmt.Errorf("waiting for PONG: %w", err)
		}
		switch {
		case line == "PONG":
			return c, nil
		case line == "PING":
			if _, err := c.Write([]byte("PONG\r\n")); err != nil {
				return nil, err
			}
		case strings.HasPrefix(strings.ToUpper(line), "-ERR"):
			return nil, serverError(strings.Trim(strings.TrimSpace(line[4:]), "'"))
		}
	}
}

// connectLine is the CONNECT protocol line, as nats.go's connectProto
// builds it.
func connectLine(server *url.URL, o *nats.Options, info serverInfo, secure bool) ([]byte, error) {
	ci := struct {
		Verbose  bool   `json:"verbose"`
		Pedantic bool   `json:"pedantic"`
		JWT      string `json:"jwt,omitempty"`
		Nkey     string `json:"nkey,omitempty"`
		Sig      string `json:"sig,omitempty"`
		User     string `json:"user,omitempty"`
		Pass     string `json:"pass,omitempty"`
		Token    string `json:"auth_token,omitempty"`
		TLS      bool   `json:"tls_required"`
		Name     string `json:"name"`
		Lang     string `json:"lang"`
		Version  string `json:"version"`
		Protocol int    `json:"protocol"`
		Echo     bool   `json:"echo"`
		Headers  bool   `json:"headers"`
	}{TLS: secure, Name: o.Name, Lang: "go", Version: nats.Version, Protocol: 1, Echo: true, Headers: info.Headers}
	if u := server.User; u != nil {
		if p, ok := u.Password(); ok {
			ci.User, ci.Pass = u.Username(), p
		} else {
			ci.Token = u.Username()
		}
	} else {
		ci.User, ci.Pass, ci.Token, ci.Nkey = o.User, o.Password, o.Token, o.Nkey
	}
	if o.UserJWT != nil {
		jwt, err := o.UserJWT()
		if err != nil {
			return nil, err
		}
		ci.JWT = jwt
	}
	if ci.JWT != "" || ci.Nkey != "" {
		if o.SignatureCB == nil {
			return nil, errors.New("nats: no signature callback for the nkey or user JWT")
		}
		sig, err := o.SignatureCB([]byte(info.Nonce))
		if err != nil {
			return nil, fmt.Errorf("error signing nonce: %w", err)
		}
		ci.Sig = base64.RawURLEncoding.EncodeToString(sig)
	}
	b, err := json.Marshal(ci)
	if err != nil {
		return nil, err
	}
	return append(append([]byte("CONNECT "), b...), "\r\n"...), nil
}

// serverError maps the server's -ERR text to nats.go's errors where
// callers test for them (permanent).
func serverError(text string) error {
	switch lower := strings.ToLower(text); {
	case strings.Contains(lower, "authorization violation"):
		return fmt.Errorf("%w: %s", nats.ErrAuthorization, text)
	case strings.Contains(lower, "user authentication expired"):
		return fmt.Errorf("%w: %s", nats.ErrAuthExpired, text)
	case strings.Contains(lower, "user authentication revoked"):
		return fmt.Errorf("%w: %s", nats.ErrAuthRevoked, text)
	case strings.Contains(lower, "account authentication expired"):
		return fmt.Errorf("%w: %s", nats.ErrAccountAuthExpired, text)
	case strings.Contains(lower, "secure connection - tls required"):
		return fmt.Errorf("%w: %s", nats.ErrSecureConnRequired, text)
	}
	return fmt.Errorf("nats: %s", text)
}

// readLine reads a control line during the handshake, without its CRLF.
func readLine(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		part, more, err := r.ReadLine()
		if err != nil {
			return "", err
		}
		b = append(b, part...)
		if len(b) > maxControlLine {
			return "", protocolErr("control line longer than %d bytes", maxControlLine)
		}
		if !more {
			return string(b), nil
		}
	}
}
