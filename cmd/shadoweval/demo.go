package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/shadoweval/shadoweval/demo"
)

func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("demo", stderr)
	var opt demo.Options
	fs.DurationVar(&opt.Duration, "duration", 0, "how long to run the traffic, on the demo clock (0: until Ctrl-C)")
	fs.Float64Var(&opt.Rate, "rate", demo.DefaultRate, "events per second per arm, on the demo clock")
	fs.Float64Var(&opt.Speed, "speed", demo.DefaultSpeed, "how many times faster than the wall clock the demo clock runs until the canary has failed (1: real time)")
	fs.DurationVar(&opt.DegradeAfter, "degrade-after", 0, "when the canary's quality drops, on the demo clock (0: as soon as the canary analysis passes, at most 5m)")
	fs.StringVar(&opt.Listen, "listen", "", "HTTP listen address (default "+demo.DefaultListen+", or a free port when that one is busy)")
	fs.Uint64Var(&opt.Seed, "seed", 1, "random seed of the generated gold set and traffic")
	fs.DurationVar(&opt.Every, "every", demo.DefaultEvery, "how often to print the arms' windows, on the demo clock")
	logLevel := fs.String("log-level", "warn", "level of the sidecar's own logs on stderr: debug, info, warn, error")
	if code, ok := parseNoArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if opt.Rate <= 0 {
		fmt.Fprintf(stderr, "shadoweval demo: --rate must be positive, not %v\n", opt.Rate)
		return exitBadInput
	}
	if opt.Speed <= 0 {
		fmt.Fprintf(stderr, "shadoweval demo: --speed must be positive, not %v\n", opt.Speed)
		return exitBadInput
	}
	if opt.DegradeAfter < 0 || opt.Every <= 0 || opt.Duration < 0 {
		fmt.Fprintln(stderr, "shadoweval demo: --every must be positive, --duration and --degrade-after not negative")
		return exitBadInput
	}
	opt.Out = stdout
	opt.Logger = newLogger(stderr, *logLevel)
	setMemoryLimit(opt.Logger)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal the demo shuts down cleanly; a second
		// one gets the default behaviour (the process ends at once).
		<-ctx.Done()
		stop()
	}()
	if err := demo.Run(ctx, opt); err != nil {
		fmt.Fprintf(stderr, "shadoweval %v\n", err)
		return exitFailed
	}
	return exitOK
}
