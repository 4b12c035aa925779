package stream

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedOptions configures an in-process NATS server.
type EmbeddedOptions struct {
	// Host defaults to 127.0.0.1: the embedded server is for this machine.
	Host string
	// Port to listen on; 0 or -1 picks a free port.
	Port int
	// FreePortIfBusy takes a free port when Port is in use, instead of
	// failing: `shadoweval run` asks for NATS's own port, 4222, where
	// replay and the nats CLI look by default, and must still start on a
	// machine where another server has it.
	FreePortIfBusy bool
	// StoreDir holds JetStream data. Empty: a temporary directory that
	// Shutdown removes.
	StoreDir string
	// MaxPayload caps message size in bytes; 0 keeps the server default
	// (1 MiB).
	MaxPayload int32
	// Logger receives the server's notices, warnings and errors; nil keeps
	// the server silent.
	Logger *slog.Logger
	// ReadyTimeout bounds the wait for the listener; 0 means 10 s.
	ReadyTimeout time.Duration
}

// Embedded is a running in-process NATS server with JetStream enabled.
type Embedded struct {
	srv      *server.Server
	storeDir string
	tempDir  string // removed on Shutdown when set
	shutdown sync.Once
}

// StartEmbedded starts nats-server in this process, with JetStream on, and
// waits until it accepts connections.
func StartEmbedded(opt EmbeddedOptions) (*Embedded, error) {
	e := &Embedded{}
	storeDir := opt.StoreDir
	if storeDir == "" {
		dir, err := os.MkdirTemp("", "shadoweval-nats-")
		if err != nil {
			return nil, fmt.Errorf("embedded nats: %w", err)
		}
		storeDir, e.tempDir = dir, dir
	}
	e.storeDir = storeDir
	host := opt.Host
	if host == "" {
		host = "127.0.0.1"
	}
	port := opt.Port
	if port <= 0 {
		port = -1 // nats-server reads 0 as its default port 4222
	} else {
		// nats-server only logs a listen failure and its readiness check
		// then waits out its whole timeout: try the port first for a
		// prompt, clear error.
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		switch {
		case err != nil && opt.FreePortIfBusy:
			port = -1
		case err != nil:
			e.removeTemp()
			return nil, fmt.Errorf("embedded nats: %w", err)
		default:
			l.Close()
		}
	}
	srv, err := e.start(opt, host, port)
	if err != nil && port > 0 && opt.FreePortIfBusy {
		// Taken between the check and the server's own listen.
		srv, err = e.start(opt, host, -1)
	}
	if err != nil {
		e.removeTemp()
		return nil, err
	}
	e.srv = srv
	return e, nil
}

// start runs one server on host:port and waits until it accepts
// connections.
func (e *Embedded) start(opt EmbeddedOptions, host string, port int) (*server.Server, error) {
	sopts := &server.Options{
		ServerName: "shadoweval-embedded",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   e.storeDir,
		MaxPayload: opt.MaxPayload,
		NoSigs:     true,
		NoLog:      opt.Logger == nil,
		// No HTTP monitoring, no cluster: the embedded server is a
		// convenience for a single sidecar and the demo.
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if opt.Logger != nil {
		srv.SetLoggerV2(slogAdapter{opt.Logger}, false, false, false)
	}
	go srv.Start()
	wait := opt.ReadyTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, errors.New("embedded nats: server not ready for connections after " + wait.String())
	}
	return srv, nil
}

// Port is the port the server listens on.
func (e *Embedded) Port() int { return e.srv.Addr().(*net.TCPAddr).Port }

// ClientURL is the nats:// URL clients connect to.
func (e *Embedded) ClientURL() string { return e.srv.ClientURL() }

// Server is the underlying nats-server, for callers that need more than a
// URL (monitoring, in-process connections).
func (e *Embedded) Server() *server.Server { return e.srv }

// StoreDir is the JetStream store directory (the configured one or the
// temporary one).
func (e *Embedded) StoreDir() string { return e.storeDir }

// Shutdown stops the server, waits for it to finish and removes the
// temporary store directory if StartEmbedded created one. It is safe to
// call more than once.
func (e *Embedded) Shutdown() {
	e.shutdown.Do(func() {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
		e.removeTemp()
	})
}

func (e *Embedded) removeTemp() {
	if e.tempDir != "" {
		_ = os.RemoveAll(e.tempDir)
	}
}

// slogAdapter routes the server's log lines to a slog.Logger.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Noticef(format string, v ...any) {
	a.l.Info(fmt.Sprintf(format, v...), "component", "nats-server")
}
func (a slogAdapter) Warnf(format string, v ...any) {
	a.l.Warn(fmt.Sprintf(format, v...), "component", "nats-server")
}
func (a slogAdapter) Fatalf(format string, v ...any) {
	a.l.Error(fmt.Sprintf(format, v...), "component", "nats-server", "fatal", true)
}
func (a slogAdapter) Errorf(format string, v ...any) {
	a.l.Error(fmt.Sprintf(format, v...), "component", "nats-server")
}
func (a slogAdapter) Debugf(format string, v ...any) {
	a.l.Debug(fmt.Sprintf(format, v...), "component", "nats-server")
}
func (a slogAdapter) Tracef(format string, v ...any) {
	a.l.Debug(fmt.Sprintf(format, v...), "component", "nats-server")
}
