package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/shadoweval/shadoweval/internal/cmdutil"
	"github.com/shadoweval/shadoweval/stream"
)

func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("replay", stderr)
	subject := fs.String("subject", stream.DefaultReplaySubject, "subject to publish to")
	rate := fs.Float64("rate", 0, "messages per second (0: as fast as possible)")
	natsURL := fs.String("nats-url", cmp.Or(os.Getenv("NATS_URL"), nats.DefaultURL), "NATS server URL (default: $NATS_URL, else the port where `shadoweval run` starts its embedded server)")
	msgID := fs.Bool("msg-id", true, "set Nats-Msg-Id from each event's event_id")
	partitionKey := fs.String("partition-key", "", `"qid": publish each event to SUBJECT.<key of its qid>, for a partitioned stream (cluster.partitions); "": to SUBJECT`)
	if code, ok := parseFlags(fs, reorder(args), stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: shadoweval replay FILE [--subject S] [--rate N] [--nats-url U] [--msg-id=false] [--partition-key qid]\nrun 'shadoweval replay --help' for its flags and examples")
		return exitBadInput
	}
	if err := stream.CheckPartitionKey(*partitionKey); err != nil {
		fmt.Fprintf(stderr, "shadoweval replay: --partition-key: %v\n", err)
		return exitBadInput
	}
	if *subject == "" || strings.ContainsAny(*subject, "*> \t") || strings.HasPrefix(*subject, ".") || strings.HasSuffix(*subject, ".") || strings.Contains(*subject, "..") {
		fmt.Fprintf(stderr, "shadoweval replay: --subject %q: want a subject to publish to, without wildcards, spaces or empty tokens (such as rag.trace.live)\n", *subject)
		return exitBadInput
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "shadoweval replay: %v\n", err)
		return exitBadInput
	}
	defer f.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	connectCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	nc, err := stream.Connect(connectCtx, stream.ConnOptions{URL: *natsURL, Name: "shadoweval-replay"})
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "shadoweval replay: %v\n", err)
		fmt.Fprintf(stderr, "Is a NATS server listening there? `shadoweval run` without a NATS URL starts one on %s (or on a free port when that one is taken: its log line \"embedded NATS server\" gives the URL to pass as --nats-url).\n", nats.DefaultURL)
		return exitBadInput
	}
	defer nc.Close()
	opt := stream.ReplayOptions{Name: fs.Arg(0), Subject: *subject, Rate: *rate, MsgID: *msgID, PartitionKey: *partitionKey}
	if isTerminal(stdout) {
		opt.Progress = func(sent, total int) { drawProgress(stdout, sent, total) }
	}
	st, err := stream.Replay(ctx, nc, f, opt)
	if opt.Progress != nil {
		fmt.Fprintln(stdout)
	}
	if err != nil && !errors.Is(err, stream.ErrNotStored) {
		fmt.Fprintf(stderr, "shadoweval replay: %v\n", err)
		return exitBadInput
	}
	to := *subject
	if *partitionKey != "" {
		to += ".<key>"
	}
	fmt.Fprintf(stdout, "published %d messages (%d bytes) to %s in %s", st.Sent, st.Bytes, to, st.Elapsed.Round(time.Millisecond))
	if st.Stream != "" {
		fmt.Fprintf(stdout, "; stored by stream %s: %d", st.Stream, st.Sent-st.NotStored)
	}
	if st.Unkeyed > 0 {
		fmt.Fprintf(stdout, "; %d lines without a qid were published without a key token", st.Unkeyed)
	}
	if st.Oversize > 0 {
		fmt.Fprintf(stdout, "; skipped %d lines over the server's max payload (first at line %d)", st.Oversize, st.FirstOversizeLine)
	}
	fmt.Fprintln(stdout)
	code := exitOK
	if err != nil {
		fmt.Fprintf(stderr, "shadoweval replay: %v; publish the file again: Nats-Msg-Id lets the stream drop the copies it has\n", err)
		code = exitFailed
	}
	if st.Oversize > 0 {
		fmt.Fprintf(stderr, "shadoweval replay: %s: %d lines longer than the server's max_payload (%d bytes) were not published (the first at line %d)\n", fs.Arg(0), st.Oversize, nc.MaxPayload(), st.FirstOversizeLine)
		code = exitFailed
	}
	if st.NotJSON > 0 {
		fmt.Fprintf(stderr, "shadoweval replay: %s: lines that are not valid JSON: %d of %d (the first at line %d); published all the same: the sidecar rejects them as invalid_json (shadoweval_rejected_events_total, the dead-letter subject)\n",
			fs.Arg(0), st.NotJSON, st.Sent, st.FirstNotJSONLine)
		code = exitFailed
	}
	return code
}

// reorder lets flags follow the positional FILE, as users type them.
func reorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-"):
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) && !isBoolFlag(a) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	return append(flags, pos...)
}

func isBoolFlag(a string) bool { return strings.TrimLeft(a, "-") == "msg-id" }

func isTerminal(w io.Writer) bool { return cmdutil.IsTerminal(w) }

func drawProgress(w io.Writer, sent, total int) {
	if total <= 0 {
		fmt.Fprintf(w, "\r%d sent", sent)
		return
	}
	const width = 40
	done := width * sent / total
	fmt.Fprintf(w, "\r[%s%s] %d/%d", strings.Repeat("=", done), strings.Repeat(" ", width-done), sent, total)
}
