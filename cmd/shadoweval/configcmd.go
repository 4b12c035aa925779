package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/shadoweval/shadoweval/config"
)

const configUsage = `usage: shadoweval config (check FILE... | defaults)

  shadoweval config check FILE...   check configuration files: "FILE: ok", or every
                                    problem of each, with its line (exit 2)
  shadoweval config defaults        print the default configuration, every key and gate

examples:
  shadoweval config defaults > shadoweval.yaml
  shadoweval config check shadoweval.yaml
`

// runConfig is `shadoweval config`: check files, or print the defaults.
func runConfig(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, configUsage)
		return exitBadInput
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, configUsage)
		return exitOK
	case "check":
		files := args[1:]
		for _, f := range files {
			if f == "-h" || f == "--help" {
				fmt.Fprint(stdout, configUsage)
				return exitOK
			}
			if strings.HasPrefix(f, "-") && f != "-" {
				fmt.Fprintf(stderr, "shadoweval config check: unknown flag %s (config check takes only files)\n", f)
				return exitBadInput
			}
		}
		if len(files) == 0 {
			fmt.Fprintln(stderr, "shadoweval config check: no FILE given")
			fmt.Fprint(stderr, configUsage)
			return exitBadInput
		}
		code := exitOK
		for _, f := range files {
			if _, err := config.Load(f); err != nil {
				// Problems already name the file and line, one per line.
				fmt.Fprintln(stderr, err)
				code = exitBadInput
				continue
			}
			fmt.Fprintf(stdout, "%s: ok\n", f)
		}
		return code
	case "defaults":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "shadoweval config defaults: unexpected argument %q\n", args[1])
			return exitBadInput
		}
		if _, err := stdout.Write(config.DefaultYAML()); err != nil {
			fmt.Fprintf(stderr, "shadoweval config defaults: %v\n", err)
			return exitBadInput
		}
		return exitOK
	}
	fmt.Fprintf(stderr, "shadoweval config: unknown subcommand %q\n", args[0])
	fmt.Fprint(stderr, configUsage)
	return exitBadInput
}
