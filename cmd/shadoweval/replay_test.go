package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/testenv"
)

func TestReplayUsage(t *testing.T) {
	dir := t.TempDir()
	file := testenv.WriteFile(t, dir, "trace.jsonl", []byte("{\"qid\":\"A1\"}\n"))
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no file", []string{"--partition-key", "qid"}, "usage: shadoweval replay FILE"},
		{"unknown key", []string{file, "--partition-key", "event_id"}, `--partition-key: want "qid" or "", got "event_id"`},
		{"unknown key with =", []string{"--partition-key=QID", file}, `--partition-key: want "qid" or "", got "QID"`},
		{"empty subject", []string{file, "--subject", ""}, `--subject "": want a subject to publish to`},
		{"wildcard subject", []string{file, "--subject", "rag.>"}, `--subject "rag.>": want a subject to publish to, without wildcards`},
		{"empty token", []string{file, "--subject", "rag..live"}, `--subject "rag..live"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			// No server listens there: a usage error is found before
			// connecting.
			args := append([]string{"--nats-url", "nats://127.0.0.1:1"}, tc.args...)
			if code := runReplay(args, &out, &errs); code != exitBadInput {
				t.Fatalf("exit %d, want %d; stderr %s", code, exitBadInput, errs.String())
			}
			if !strings.Contains(errs.String(), tc.want) {
				t.Fatalf("stderr %q lacks %q", errs.String(), tc.want)
			}
		})
	}
}

// replay FILE --partition-key qid: the events reach SUBJECT.<key>, and the
// summary counts the line that had no qid.
func TestReplayPartitionKeyCommand(t *testing.T) {
	s, nc := testenv.RunConnected(t)
	got := testenv.Collect(t, nc, "rag.trace.>", 4)
	file := filepath.Join(t.TempDir(), "trace.jsonl")
	input := "{\"qid\":\"A1\"}\n{\"qid\":\"x.y\"}\n{\"qid\":null}\n"
	if err := os.WriteFile(file, []byte(input), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	code := runReplay([]string{file, "--partition-key", "qid", "--subject", "rag.trace.canary", "--nats-url", s.ClientURL()}, &out, &errs)
	if code != exitOK {
		t.Fatalf("exit %d; stderr %s", code, errs.String())
	}
	for _, want := range []string{"rag.trace.canary.A1", "rag.trace.canary.hbed3ad197f3152d6", "rag.trace.canary"} {
		if m := testenv.Next(t, got); m.Subject != want {
			t.Errorf("subject %s, want %s", m.Subject, want)
		}
	}
	if !regexp.MustCompile(`^published 3 messages \(\d+ bytes\) to rag\.trace\.canary\.<key> in \S+; 1 lines without a qid were published without a key token\n$`).MatchString(out.String()) {
		t.Errorf("summary %q", out.String())
	}
}

// A line that is not JSON is published all the same, and replay says so
// on stderr and exits 1.
func TestReplayNotJSON(t *testing.T) {
	s, nc := testenv.RunConnected(t)
	got := testenv.Collect(t, nc, "rag.trace.>", 3)
	file := testenv.WriteFile(t, t.TempDir(), "trace.jsonl", []byte("{\"qid\":\"A1\"}\nnot json\n{\"qid\":\"A2\",\"qid\":\"A3\"}\n"))
	var out, errs bytes.Buffer
	if code := runReplay([]string{file, "--nats-url", s.ClientURL()}, &out, &errs); code != exitFailed {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitFailed, errs.String())
	}
	for range 3 {
		testenv.Next(t, got)
	}
	if want := "lines that are not valid JSON: 2 of 3 (the first at line 2)"; !strings.Contains(errs.String(), want) {
		t.Errorf("stderr %q lacks %q", errs.String(), want)
	}
	if !strings.HasPrefix(out.String(), "published 3 messages") {
		t.Errorf("stdout %q", out.String())
	}
}

// Without --nats-url, replay goes to $NATS_URL.
func TestReplayNATSURLFromEnvironment(t *testing.T) {
	s, nc := testenv.RunConnected(t)
	got := testenv.Collect(t, nc, "rag.trace.live", 1)
	t.Setenv("NATS_URL", s.ClientURL())
	file := testenv.WriteFile(t, t.TempDir(), "trace.jsonl", []byte("{\"qid\":\"A1\"}\n"))
	var out, errs bytes.Buffer
	if code := runReplay([]string{file}, &out, &errs); code != exitOK {
		t.Fatalf("exit %d; stderr %s", code, errs.String())
	}
	testenv.Next(t, got)
}

// A line longer than the server's max_payload cannot be published: replay
// publishes the rest, says so on stderr and exits 1.
func TestReplayOversize(t *testing.T) {
	opts := testenv.Options()
	opts.MaxPayload = 1024
	s := testenv.RunServer(t, opts)
	file := testenv.WriteFile(t, t.TempDir(), "trace.jsonl", []byte("{\"qid\":\"A1\"}\n{\"qid\":\""+strings.Repeat("x", 2000)+"\"}\n"))
	var out, errs bytes.Buffer
	if code := runReplay([]string{file, "--nats-url", s.ClientURL()}, &out, &errs); code != exitFailed {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitFailed, errs.String())
	}
	if want := "1 lines longer than the server's max_payload (1024 bytes) were not published (the first at line 2)"; !strings.Contains(errs.String(), want) {
		t.Errorf("stderr %q lacks %q", errs.String(), want)
	}
	if !strings.HasPrefix(out.String(), "published 1 messages") {
		t.Errorf("stdout %q", out.String())
	}
}
