package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
)

// loadConfig reads --config (or the defaults) and applies the flag
// overrides, then validates the result.
func loadConfig(path, natsURL, gold, listen string) (*config.Config, error) {
	cfg := config.Default()
	if path != "" {
		c, err := config.Load(path)
		if err != nil {
			return nil, err
		}
		cfg = *c
	}
	if natsURL != "" {
		cfg.NATS.URL = natsURL
	}
	if gold != "" {
		cfg.Gold.File = gold
	}
	if listen != "" {
		cfg.HTTP.Listen = listen
	}
	return &cfg, cfg.Validate()
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

func runRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", stderr)
	configPath := fs.String("config", "", "YAML configuration file")
	natsURL := fs.String("nats-url", "", "NATS server URL (overrides nats.url; empty everywhere: embedded server)")
	gold := fs.String("gold", "", "gold JSONL file (overrides gold.file)")
	listen := fs.String("listen", "", "HTTP listen address (overrides http.listen)")
	if code, ok := parseNoArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	cfg, err := loadConfig(*configPath, *natsURL, *gold, *listen)
	if err != nil {
		fmt.Fprintf(stderr, "shadoweval run: %v\n", err)
		return exitBadInput
	}
	log := newLogger(stderr, cfg.Log.Level)
	setMemoryLimit(log)
	// GOMAXPROCS set by hand is kept as it is.
	app, err := sidecar.New(sidecar.Options{Config: cfg, Logger: log, AdaptProcs: os.Getenv("GOMAXPROCS") == "",
		EmbeddedNATSPort: nats.DefaultPort, Version: buildVersion()})
	if err != nil {
		fmt.Fprintf(stderr, "shadoweval run: %v\n", err)
		return exitBadInput
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "shadoweval run: %v\n", err)
		return exitBadInput
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-hup:
			app.Reload() //nolint:errcheck // logged and counted by the app
			continue
		case <-ctx.Done():
		}
		break
	}
	log.Info("shutting down")
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := app.Stop(stopCtx); err != nil {
		fmt.Fprintf(stderr, "shadoweval run: %v\n", err)
		return exitFailed
	}
	return exitOK
}
