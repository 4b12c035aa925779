// Command shadoweval is the RAG shadow-evaluation sidecar and its offline
// tools. main only parses flags, turns signals into a context and maps
// results to exit codes; the work is in packages sidecar (the running
// app), offline and demo.
package main

import (
	"fmt"
	"io"
	"os"
)

// Exit codes shared by every command.
const (
	exitOK       = 0
	exitFailed   = 1 // a gate failed
	exitBadInput = 2 // bad input or usage
)

type command struct {
	name     string
	synopsis string // the usage line, after "shadoweval "
	summary  string // one line for the command list
	run      func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"run", "run [--config F] [--nats-url U] [--gold F] [--listen A]", "the sidecar", runRun},
		{"demo", "demo [--duration D] [--rate N] [--speed X] [--degrade-after D] [--listen A] [--every D] [--seed N] [--log-level L]", "the one-command tour: embedded NATS, the sidecar, live + canary traffic, a canary analysis", runDemo},
		{"replay", "replay FILE [--subject S] [--rate N] [--nats-url U] [--msg-id=false] [--partition-key qid]", "publish a JSONL file to NATS", runReplay},
		{"score", "score --gold F --trace F [--k 5] [--gates precision=0.80,...]", "offline seed 002 report", runScore},
		{"eval", "eval --gold F --trace F [--baseline F] [--k 1,3,5,10] [--format json|table] [--quantiles exact|sketch] [--config F] [--per-question F]", "offline seed 001 report; with a baseline, the canary analysis (exit 0 pass, 1 fail, 3 inconclusive)", runEval},
		{"agreement", "agreement (--pairs F | --scholar F --auditor F) [--tsv F] [--pa_gate 0.90 --kappa_gate 0.75 --abstain_gate 0.02]", "offline seed 003 report", runAgreement},
		{"triage", "triage TRACE CHUNKS", "offline seed 004 labels", runTriage},
		{"config", "config (check FILE... | defaults)", "check or print the configuration", runConfig},
		{"rules", "rules [--config F] [--prometheusrule [--name N] [--namespace NS]]", "Prometheus alert rules of the gates", runRules},
		{"gen", "gen --gold F --trace F [--items N] [--seed N] [--awkward R]", "write test data", runGen},
		{"version", "version", "print the version", runVersion},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitBadInput
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	case "help":
		if len(args) > 2 {
			fmt.Fprintf(stderr, "shadoweval help: unexpected argument %q: help takes one command\n", args[2])
			return exitBadInput
		}
		if len(args) > 1 {
			// help COMMAND is COMMAND --help.
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return exitOK
	case "-version", "--version":
		return runVersion(args[1:], stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "shadoweval: unknown command %q\n", args[0])
	usage(stderr)
	return exitBadInput
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: shadoweval COMMAND [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\n'shadoweval COMMAND --help' shows a command's flags and examples; 'shadoweval --version' the version.")
}
