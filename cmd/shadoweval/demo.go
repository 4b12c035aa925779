package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/shadoweval/shadoweval/sidecar/demo"
)

func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("demo", stderr)
	var opt demo.Options
	fs.DurationVar(&opt.Duration, "duration", 0, "how long to run the traffic (0: until Ctrl-C)")
	fs.Float64Var(&opt.Rate, "rate", demo.DefaultRate, "events per second per arm")
	fs.DurationVar(&opt.DegradeAfter, "degrade-after", 0, "when the canary's quality drops (0: "+demo.DefaultDegradeAfter.String()+", or half of --duration when --duration is under "+(2*demo.DefaultDegradeAfter).String()+")")
	fs.StringVar(&opt.Listen, "listen", "", "HTTP listen address (default "+demo.DefaultListen+", or a free port when that one is busy)")
	fs.Uint64Var(&opt.Seed, "seed", 1, "random seed of the generated gold set and traffic")
	fs.DurationVar(&opt.Every, "every", demo.DefaultEvery, "how often to print the arms' windows")
	logLevel := fs.String("log-level", "warn", "level of the sidecar's own logs on stderr: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return exitBadInput
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "shadoweval demo: unexpected argument %q\n", fs.Arg(0))
		return exitBadInput
	}
	if opt.Rate <= 0 {
		fmt.Fprintf(stderr, "shadoweval demo: --rate must be positive, not %v\n", opt.Rate)
		return exitBadInput
	}
	if opt.DegradeAfter < 0 || opt.Every <= 0 || opt.Duration < 0 {
		fmt.Fprintln(stderr, "shadoweval demo: --every must be positive, --duration and --degrade-after not negative")
		return exitBadInput
	}
	opt.Out = stdout
	opt.Logger = newLogger(stderr, *logLevel)
	setGC(opt.Logger)
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
