// Command glossarygen writes the metric glossary table of the README from
// the window metric registry (window.RefreshGlossary), so that a metric's
// glossary text is edited in its registry row only. `go generate ./window`
// runs it on the repository's README.md:
//
//	glossarygen README
//
// It leaves the file untouched when the table is current.
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/shadoweval/shadoweval/window"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: glossarygen README")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "glossarygen:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	readme, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := window.RefreshGlossary(readme)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(out, readme) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}
