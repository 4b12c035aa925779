package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar/alert"
)

// runRules is `shadoweval rules`: print the Prometheus alerting rules of
// the configured gates (the shipped defaults without --config), or with
// --prometheusrule a monitoring.coreos.com/v1 PrometheusRule manifest.
func runRules(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("rules", stderr)
	configPath := fs.String("config", "", "YAML configuration file (default: the shipped gates)")
	manifest := fs.Bool("prometheusrule", false, "print a PrometheusRule manifest instead of a rule file")
	name := fs.String("name", "shadoweval", "metadata.name of the PrometheusRule")
	namespace := fs.String("namespace", "", "metadata.namespace of the PrometheusRule (default: none)")
	if code, ok := parseNoArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if !*manifest {
		var named []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "name" || f.Name == "namespace" {
				named = append(named, "--"+f.Name)
			}
		})
		if len(named) > 0 {
			fmt.Fprintf(stderr, "shadoweval rules: %s needs --prometheusrule\n", named[0])
			return exitBadInput
		}
	}
	cfg := config.Default()
	if *configPath != "" {
		c, err := config.Load(*configPath)
		if err != nil {
			fmt.Fprintln(stderr, err) // names the file and line
			return exitBadInput
		}
		cfg = *c
	}
	var out []byte
	var err error
	if *manifest {
		out, err = alert.PrometheusRule(cfg.Gates, *name, *namespace)
	} else {
		out, err = alert.Rules(cfg.Gates)
	}
	if err != nil {
		fmt.Fprintf(stderr, "shadoweval rules: %v\n", err)
		return exitBadInput
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "shadoweval rules: %v\n", err)
		return exitBadInput
	}
	return exitOK
}
