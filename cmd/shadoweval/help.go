package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// help is what `shadoweval COMMAND --help` prints, to stdout, between the
// usage line and the flags: what the command does, then examples.
var help = map[string]struct{ about, examples string }{
	"run": {
		about: `The sidecar: subscribes to the events on NATS, scores each against its gold
item, keeps the windows per arm, raises alerts and runs canary analyses, and
serves the status page, the API and /metrics on one HTTP listener. Without a
NATS URL (nats.url, --nats-url) it starts an embedded NATS server with
JetStream on nats://127.0.0.1:4222, or on a free port when 4222 is in use
(the log says which). SIGHUP reloads the gold file; SIGINT or SIGTERM stops.
Exit: 0 on a clean stop, 1 when stopping fails, 2 on a bad configuration or
a failed start.`,
		examples: `  shadoweval run --gold gold.jsonl
  shadoweval config defaults > shadoweval.yaml && shadoweval run --config shadoweval.yaml
  shadoweval run --config shadoweval.yaml --nats-url nats://nats.example:4222 --listen 127.0.0.1:9464`,
	},
	"demo": {
		about: `The one-command tour: an embedded NATS server, the sidecar and generated
traffic for a live and a canary arm (5 % of it awkward on purpose), a canary
analysis printed as its verdict moves, the alert gates' transitions and the
status page's URL. Nothing is needed beforehand and nothing is left behind.`,
		examples: `  shadoweval demo                        # until Ctrl-C
  shadoweval demo --duration 2m30s       # about 35 s of wall time
  shadoweval demo --speed 1 --rate 20    # real time, slowly`,
	},
	"score": {
		about: `The seed 002 report of a trace file against a gold file, number for number
as the reference scorer prints it. Exit: 0 when the gates pass, 1 when one
fails, 2 on bad input.`,
		examples: `  shadoweval score --gold gold.jsonl --trace runs/trace.jsonl
  shadoweval score --gold gold.jsonl --trace runs/trace.jsonl --k 10 --gates precision=0.85,chr=0.80`,
	},
	"eval": {
		about: `The seed 001 report: every window metric of a trace file, overall and per
content type, as the live windows compute them, and bad_qids. With
--baseline, the deltas and the canary analysis of the candidate against the
baseline file. --per-question writes each question's ranking metrics
(trec_eval's -q), with --baseline their differences, largest regression
first. Exit: 0 pass (or no baseline), 1 fail, 3 inconclusive, 2 bad input.`,
		examples: `  shadoweval eval --gold gold.jsonl --trace candidate.jsonl
  shadoweval eval --gold gold.jsonl --trace candidate.jsonl --baseline live.jsonl --per-question questions.jsonl
  shadoweval eval --gold gold.jsonl --trace candidate.jsonl --baseline live.jsonl --format table > eval.md
  shadoweval eval --gold gold.jsonl --trace candidate.jsonl --baseline live.jsonl --config shadoweval.yaml`,
	},
	"agreement": {
		about: `The seed 003 report of Scholar and Auditor labels, and the disagreements
TSV. Exit: 0 when the gates pass, 1 when one fails, 2 on bad input.`,
		examples: `  shadoweval agreement --pairs pairs.jsonl
  shadoweval agreement --scholar scholar.jsonl --auditor auditor.jsonl --tsv disagreements.tsv`,
	},
	"triage": {
		about: `The seed 004 labels, one JSON line per trace line, from the traces and the
chunk texts. TRACE is JSONL in seed 004's format, a line
{"q": "...", "chunks": [{"id": "..."}, ...], "answer": "..."}; CHUNKS a JSON
array of {"id": "...", "text": "..."} objects. The sidecar's events
(retrieved_ids, answer_json) are judged by shadoweval eval instead.
Exit: 0, or 2 on bad input.`,
		examples: `  shadoweval triage runs/trace.jsonl data/chunks.json > triage.jsonl`,
	},
	"replay": {
		about: `Publishes a JSONL file to NATS, a message per non-blank line, in order,
with Nats-Msg-Id from each event_id. The default URL is $NATS_URL, else
nats://127.0.0.1:4222, where ` + "`shadoweval run`" + ` starts its embedded server.
Lines that are not JSON are published all the same (the sidecar rejects
them) and counted. Where a JetStream stream stores the subject, each
message must be confirmed by it; those lost with a server or the stream's
leader are published again. Exit: 0; 1 when some lines are not JSON,
longer than the server's max_payload, or not stored by the stream; 2 on
bad usage, an unreadable file or no NATS server.`,
		examples: `  shadoweval replay trace.jsonl
  shadoweval replay trace.jsonl --subject rag.trace.canary --rate 500
  shadoweval replay trace.jsonl --nats-url nats://127.0.0.1:4222 --partition-key qid`,
	},
	"rules": {
		about: `Prometheus alerting rules of the gates (the shipped ones without --config),
or a PrometheusRule manifest. Exit: 0, or 2 on a bad configuration.`,
		examples: `  shadoweval rules > shadoweval-rules.yaml
  shadoweval rules --config shadoweval.yaml --prometheusrule --namespace monitoring | kubectl apply -f -`,
	},
	"gen": {
		about: `Deterministic, seeded test data: a gold set and trace events in the shapes
of the seed pages, with a share of awkward (but valid) content.`,
		examples: `  shadoweval gen --gold gold.jsonl --trace trace.jsonl --items 300
  shadoweval gen --gold gold.jsonl --items 100000 --awkward 0 --seed 7`,
	},
}

// parseFlags parses args into fs. --help (-h) prints the command's help to
// stdout and ends the command with exit 0; a bad flag ends it with exit 2,
// the error and a pointer to --help on stderr. ok is true when the command
// goes on.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	fs.Usage = func() {} // printed below, where it belongs
	err := fs.Parse(args)
	switch {
	case err == nil:
		return exitOK, true
	case errors.Is(err, flag.ErrHelp):
		printHelp(stdout, fs)
		return exitOK, false
	}
	fmt.Fprintf(stderr, "run '%s --help' for its flags and examples\n", fs.Name())
	return exitBadInput, false
}

// parseNoArgs is parseFlags for a command that takes flags only: an
// argument left over (a typo, or flags after it that flag parsing never
// reached) is refused, naming it.
func parseNoArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitBadInput, false
	}
	return exitOK, true
}

// parseGoldTrace is parseFlags for a command that reads the files of
// --gold and --trace, both required, and takes no arguments.
func parseGoldTrace(fs *flag.FlagSet, args []string, gold, trace *string, stdout, stderr io.Writer) (code int, ok bool) {
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code, false
	}
	if *gold == "" || *trace == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: --gold and --trace are required, and nothing else\n", fs.Name())
		return exitBadInput, false
	}
	return exitOK, true
}

// printHelp writes the help of fs's command: usage, what it does, flags
// and examples.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	name := strings.TrimPrefix(fs.Name(), "shadoweval ")
	for _, c := range commands() {
		if c.name == name {
			fmt.Fprintf(w, "usage: shadoweval %s\n", strings.TrimSpace(c.synopsis))
		}
	}
	h := help[name]
	if h.about != "" {
		fmt.Fprintf(w, "\n%s\n", h.about)
	}
	fmt.Fprintln(w, "\nflags:")
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
	if h.examples != "" {
		fmt.Fprintf(w, "\nexamples:\n%s\n", h.examples)
	}
}
