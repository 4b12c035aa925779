package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// Every command's --help goes to stdout with its usage, flags and
// examples, and exits 0; help COMMAND says the same.
func TestHelp(t *testing.T) {
	for _, c := range commands() {
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			var out, errs bytes.Buffer
			if code := run(args, &out, &errs); code != exitOK {
				t.Errorf("%v: exit %d, want 0; stderr %s", args, code, errs.String())
			}
			if errs.Len() > 0 {
				t.Errorf("%v: stderr %q, want nothing", args, errs.String())
			}
			if !strings.HasPrefix(out.String(), "usage: shadoweval "+c.name) {
				t.Errorf("%v: stdout does not start with the usage:\n%s", args, out.String())
			}
			if _, documented := help[c.name]; documented && !strings.Contains(out.String(), "\nexamples:\n  shadoweval "+c.name+" ") {
				t.Errorf("%v: no examples:\n%s", args, out.String())
			}
		}
	}
	for _, c := range commands() {
		if _, ok := help[c.name]; !ok && c.name != "config" && c.name != "version" {
			t.Errorf("command %s has no help text", c.name)
		}
	}
	var out, errs bytes.Buffer
	if code := run([]string{"--help"}, &out, &errs); code != exitOK || !strings.Contains(out.String(), "  run ") || errs.Len() > 0 {
		t.Errorf("--help: exit %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}
}

// A bad flag is a usage error: exit 2, the problem and a pointer to
// --help on stderr, nothing on stdout.
func TestBadFlag(t *testing.T) {
	for _, name := range []string{"run", "eval", "replay", "demo", "score"} {
		var out, errs bytes.Buffer
		if code := run([]string{name, "--no-such-flag"}, &out, &errs); code != exitBadInput {
			t.Errorf("%s --no-such-flag: exit %d, want %d", name, code, exitBadInput)
		}
		if out.Len() > 0 || !strings.Contains(errs.String(), "flag provided but not defined: -no-such-flag") ||
			!strings.Contains(errs.String(), "shadoweval "+name+" --help") {
			t.Errorf("%s --no-such-flag: stdout %q, stderr %q", name, out.String(), errs.String())
		}
	}
}

// A command that takes flags only refuses an argument, naming it, rather
// than ignoring it and every flag after it.
func TestStrayArgument(t *testing.T) {
	for _, name := range []string{"run", "demo", "rules"} {
		var out, errs bytes.Buffer
		if code := run([]string{name, "extra", "--listen", ":1"}, &out, &errs); code != exitBadInput {
			t.Errorf("%s extra: exit %d, want %d", name, code, exitBadInput)
		}
		if want := "shadoweval " + name + `: unexpected argument "extra"`; out.Len() > 0 || !strings.Contains(errs.String(), want) {
			t.Errorf("%s extra: stdout %q, stderr %q; want %q", name, out.String(), errs.String(), want)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		var out, errs bytes.Buffer
		if code := run(args, &out, &errs); code != exitOK || errs.Len() > 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs.String())
		}
		if !regexp.MustCompile(`^shadoweval \S.* \(go1\.\d+.*, \w+/\w+\)\n$`).MatchString(out.String()) {
			t.Errorf("%v: %q", args, out.String())
		}
	}
	version = "v1.2.3"
	defer func() { version = "" }()
	var out bytes.Buffer
	run([]string{"version"}, &out, &out)
	if !strings.HasPrefix(out.String(), "shadoweval v1.2.3 (") {
		t.Errorf("with -X main.version=v1.2.3: %q", out.String())
	}
}

// What the top level and config check do not take is a usage error, as
// every command's stray argument is.
func TestStrayArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--version", "extra"}, `shadoweval version: unexpected argument "extra"`},
		{[]string{"version", "extra"}, `shadoweval version: unexpected argument "extra"`},
		{[]string{"help", "run", "extra"}, `shadoweval help: unexpected argument "extra"`},
		{[]string{"config", "check", "--bogus", "x.yaml"}, "shadoweval config check: unknown flag --bogus"},
	} {
		var out, errs bytes.Buffer
		if code := run(c.args, &out, &errs); code != exitBadInput || !strings.Contains(errs.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d saying %q", c.args, code, errs.String(), exitBadInput, c.want)
		}
	}
}
