package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"

	"github.com/shadoweval/shadoweval/internal/cmdutil"
	"github.com/shadoweval/shadoweval/internal/pycompat"
	"github.com/shadoweval/shadoweval/offline"
	"github.com/shadoweval/shadoweval/wire/gen"
)

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	return cmdutil.NewFlags("shadoweval", name, stderr)
}

// pyInt is an int flag read the way argparse's type=int reads it.
type pyInt int

func (p *pyInt) String() string { return strconv.Itoa(int(*p)) }
func (p *pyInt) Set(s string) error {
	v, err := pycompat.ParseInt(s)
	if err != nil {
		return fmt.Errorf("invalid int value %q", s)
	}
	*p = pyInt(v)
	return nil
}

// pyFloat is a float flag read the way argparse's type=float reads it.
type pyFloat float64

func (p *pyFloat) String() string { return pycompat.FloatRepr(float64(*p)) }
func (p *pyFloat) Set(s string) error {
	v, err := pycompat.ParseFloat(s)
	if err != nil {
		return fmt.Errorf("invalid float value %q", s)
	}
	*p = pyFloat(v)
	return nil
}

func runScore(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("score", stderr)
	opt := offline.ScoreOptions{K: 5}
	fs.StringVar(&opt.Gold, "gold", "", "gold JSONL file (required)")
	fs.StringVar(&opt.Trace, "trace", "", "trace JSONL file (required)")
	fs.Var((*pyInt)(&opt.K), "k", "cut-off for recall@k")
	fs.StringVar(&opt.Gates, "gates", offline.DefaultScoreGates, "ship gates name=value,...")
	if code, ok := parseGoldTrace(fs, args, &opt.Gold, &opt.Trace, stdout, stderr); !ok {
		return code
	}
	// The scorer's garbage is short-lived and its live heap is about the
	// gold set: collecting only near a limit scaled to the input saves a
	// sixth of the CPU while staying far below the reference's memory.
	limit := int64(1 << 30)
	if fi, err := os.Stat(opt.Gold); err == nil {
		limit = max(limit, 3*fi.Size()+512<<20)
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(limit)
	rep, err := offline.Score(opt)
	if err != nil {
		fmt.Fprintf(stderr, "shadoweval score: %v\n", err)
		return exitBadInput
	}
	fmt.Fprintf(stdout, "%s\n", rep.JSON())
	if !rep.Pass {
		return exitFailed
	}
	return exitOK
}

func runAgreement(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("agreement", stderr)
	opt := offline.AgreementOptions{
		TSVPath:     offline.DefaultTSVPath,
		PAGate:      offline.DefaultPAGate,
		KappaGate:   offline.DefaultKappaGate,
		AbstainGate: offline.DefaultAbstainGate,
	}
	fs.StringVar(&opt.Pairs, "pairs", "", "merged pairs JSONL")
	fs.StringVar(&opt.Scholar, "scholar", "", "scholar labels JSONL (with --auditor)")
	fs.StringVar(&opt.Auditor, "auditor", "", "auditor labels JSONL (with --scholar)")
	fs.StringVar(&opt.TSVPath, "tsv", opt.TSVPath, "where to write the disagreements TSV")
	// Both spellings: the reference's underscores and the usual dashes.
	for _, name := range []string{"pa_gate", "pa-gate"} {
		fs.Var((*pyFloat)(&opt.PAGate), name, "percent agreement gate")
	}
	for _, name := range []string{"kappa_gate", "kappa-gate"} {
		fs.Var((*pyFloat)(&opt.KappaGate), name, "Cohen's kappa gate")
	}
	for _, name := range []string{"abstain_gate", "abstain-gate"} {
		fs.Var((*pyFloat)(&opt.AbstainGate), name, "abstain rate gate")
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 || opt.Pairs == "" && (opt.Scholar == "" || opt.Auditor == "") {
		fmt.Fprintln(stderr, "shadoweval agreement: give --pairs F, or --scholar F and --auditor F")
		return exitBadInput
	}
	pass, err := offline.RunAgreement(stdout, opt)
	if err != nil {
		fmt.Fprintf(stderr, "shadoweval agreement: %v\n", err)
		return exitBadInput
	}
	if !pass {
		return exitFailed
	}
	return exitOK
}

func runTriage(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("triage", stderr)
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "usage: shadoweval triage TRACE CHUNKS")
		return exitBadInput
	}
	w := bufio.NewWriter(stdout)
	if err := offline.RunTriage(w, stderr, fs.Arg(0), fs.Arg(1)); err != nil {
		fmt.Fprintf(stderr, "shadoweval triage: %v\n", err)
		return exitBadInput
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "shadoweval triage: %v\n", err)
		return exitBadInput
	}
	return exitOK
}

func runGen(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("gen", stderr)
	var goldPath, tracePath string
	opt := gen.Options{Items: 1000}
	fs.StringVar(&goldPath, "gold", "", "gold JSONL to write")
	fs.StringVar(&tracePath, "trace", "", "trace JSONL to write")
	fs.IntVar(&opt.Items, "items", opt.Items, "gold items")
	fs.Uint64Var(&opt.Seed, "seed", 1, "random seed; the same seed writes the same bytes")
	fs.Float64Var(&opt.Awkward, "awkward", 0.2, "share of rows with awkward content")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "shadoweval gen: unexpected argument %q: the files are given by --gold and --trace\n", fs.Arg(0))
		return exitBadInput
	case goldPath == "" && tracePath == "":
		fmt.Fprintln(stderr, "shadoweval gen: give --gold and/or --trace")
		return exitBadInput
	case goldPath != "" && filepath.Clean(goldPath) == filepath.Clean(tracePath):
		fmt.Fprintf(stderr, "shadoweval gen: --gold and --trace are both %s\n", goldPath)
		return exitBadInput
	case opt.Items < 1 || opt.Items > maxGenItems:
		fmt.Fprintf(stderr, "shadoweval gen: --items %d: want 1 to %d\n", opt.Items, maxGenItems)
		return exitBadInput
	case !(opt.Awkward >= 0 && opt.Awkward <= 1):
		fmt.Fprintf(stderr, "shadoweval gen: --awkward %v: want a share from 0 to 1\n", opt.Awkward)
		return exitBadInput
	}
	for _, out := range []struct {
		path  string
		write func(io.Writer, gen.Options) error
	}{{goldPath, gen.WriteGold}, {tracePath, gen.WriteTraces}} {
		if out.path == "" {
			continue
		}
		if err := writeFileAtomic(out.path, func(w io.Writer) error { return out.write(w, opt) }); err != nil {
			fmt.Fprintf(stderr, "shadoweval gen: %v\n", err)
			return exitBadInput
		}
	}
	return exitOK
}

// maxGenItems bounds gen --items: ten million gold items are a few GB of
// files, a typo's extra digits many more.
const maxGenItems = 10_000_000

// writeFileAtomic writes through a temporary file renamed into place, so a
// failed run leaves nothing half-written. Errors name path, not the
// temporary file.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s: is a directory", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".shadoweval-*")
	if err != nil {
		return fmt.Errorf("%s: cannot write in its directory: %w", path, errors.Unwrap(err))
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 1<<20)
	err = errors.Join(write(w), w.Flush(), tmp.Close())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	return nil
}
