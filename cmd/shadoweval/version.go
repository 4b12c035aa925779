package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at link time (make build: -X main.version=...); empty:
// the module version the binary was built from (a tag with go install
// ...@vX.Y.Z, "(devel)" from a checkout), with the commit when known.
var version string

// buildVersion is the version `shadoweval version` prints and the sidecar
// reports.
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			fmt.Fprintln(stdout, "usage: shadoweval version\n\nPrints the version, the Go version and the platform.")
			return exitOK
		}
		fmt.Fprintf(stderr, "shadoweval version: unexpected argument %q\n", args[0])
		return exitBadInput
	}
	fmt.Fprintf(stdout, "shadoweval %s (%s, %s/%s)\n", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}
