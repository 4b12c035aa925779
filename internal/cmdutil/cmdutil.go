// Package cmdutil holds what the commands under cmd/ (and the demo
// that `shadoweval demo` runs) share.
package cmdutil

import (
	"bufio"
	"flag"
	"io"
	"os"
)

// NewFlags is the flag set of the subcommand name of prog: it reports
// its errors on stderr and returns them instead of exiting.
func NewFlags(prog, name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(prog+" "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// WriteFile creates path and writes it with write, through a buffer; it
// returns the first error of write, the flush or the close.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
