package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/shadoweval/shadoweval/internal/cmdutil"
	"github.com/shadoweval/shadoweval/offline/eval"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
)

// exitInconclusive: `eval --baseline` had too little data to decide.
const exitInconclusive = 3

func runEval(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("eval", stderr)
	var opt eval.Options
	var ks, format, configPath, perQuestion string
	fs.StringVar(&opt.Gold, "gold", "", "gold JSONL file (required)")
	fs.StringVar(&opt.Trace, "trace", "", "trace JSONL file of the candidate (required)")
	fs.StringVar(&opt.Baseline, "baseline", "", "trace JSONL file of the baseline (the live index): adds deltas and the canary analysis")
	fs.StringVar(&ks, "k", "", "cut-offs k, comma-separated (default: the configuration's k, 1,3,5,10)")
	fs.StringVar(&format, "format", "json", "output format: json or table (Markdown)")
	fs.StringVar(&configPath, "config", "", "sidecar configuration whose k, citation_offset_tolerance, lambda, limits and analysis apply")
	fs.StringVar(&perQuestion, "per-question", "", "write each question's ranking metrics to this file, a JSON line per question and file (with --baseline: the differences, largest regression first)")
	fs.StringVar(&opt.Quantiles, "quantiles", eval.QuantilesExact, "ΔS quantiles: exact, or sketch (as the live windows, memory bounded)")
	if code, ok := parseGoldTrace(fs, args, &opt.Gold, &opt.Trace, stdout, stderr); !ok {
		return code
	}
	if format != "json" && format != "table" {
		fmt.Fprintf(stderr, "shadoweval eval: --format %q: want json or table\n", format)
		return exitBadInput
	}
	if ks != "" {
		for _, s := range strings.Split(ks, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || k <= 0 {
				fmt.Fprintf(stderr, "shadoweval eval: --k %q: want positive integers separated by commas\n", ks)
				return exitBadInput
			}
			opt.Ks = append(opt.Ks, k)
		}
	}
	cfg, err := loadConfig(configPath, "", "", "")
	if err != nil {
		fmt.Fprintf(stderr, "shadoweval eval: %v\n", err)
		return exitBadInput
	}
	opt.Config = cfg
	opt.PerQuestion = perQuestion != ""
	if isTerminal(stderr) {
		opt.Progress = func(done, total int64) {
			unit, shift := "MiB", 20
			if total < 10<<20 {
				unit, shift = "KiB", 10
			}
			if total > 0 {
				drawProgress(stderr, int(done>>shift), int(total>>shift))
				fmt.Fprint(stderr, " "+unit)
			}
		}
	}
	rep, err := eval.Run(opt)
	if opt.Progress != nil {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "shadoweval eval: %v\n", err)
		return exitBadInput
	}
	// Rendered whole before anything is written: a failure leaves no
	// half report.
	var out []byte
	if format == "table" {
		out = rep.Table()
	} else if out, err = rep.JSON(); err != nil {
		fmt.Fprintf(stderr, "shadoweval eval: %v\n", err)
		return exitBadInput
	}
	if perQuestion != "" {
		lines, err := rep.PerQuestionJSONL()
		if err == nil {
			err = cmdutil.WriteFile(perQuestion, func(w io.Writer) error { _, err := w.Write(lines); return err })
		}
		if err != nil {
			fmt.Fprintf(stderr, "shadoweval eval: --per-question: %v\n", err)
			return exitBadInput
		}
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "shadoweval eval: %v\n", err)
		return exitBadInput
	}
	// A report of nothing reads as a pass in CI: say so where it shows.
	if rep.GoldItems == 0 {
		fmt.Fprintf(stderr, "shadoweval eval: %s has no gold items: every event is unlabeled and nothing was scored\n", rep.Gold)
	} else if rep.Candidate.Events.Scored == 0 {
		fmt.Fprintf(stderr, "shadoweval eval: %s: none of its %d events was scored (%d unlabeled: their qids are not in %s)\n",
			rep.Candidate.File, rep.Candidate.Events.Lines, rep.Candidate.Events.Unlabeled, rep.Gold)
	}
	switch rep.Verdict() {
	case analysis.Fail:
		return exitFailed
	case analysis.Inconclusive:
		return exitInconclusive
	}
	return exitOK
}
