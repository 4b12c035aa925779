package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gen refuses what would write nothing useful, or far too much, with the
// user's path in the message, and writes nothing then.
func TestGenRefuses(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "g.jsonl")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--items", "-1", "--gold", g}, "--items -1: want 1 to 10000000"},
		{[]string{"--items", "0", "--gold", g}, "--items 0: want 1 to 10000000"},
		{[]string{"--items", "3000000000", "--gold", g}, "--items 3000000000: want 1 to 10000000"},
		{[]string{"--awkward", "2", "--gold", g}, "--awkward 2: want a share from 0 to 1"},
		{[]string{"--awkward", "NaN", "--gold", g}, "--awkward NaN: want a share from 0 to 1"},
		{[]string{"--gold", g, "--trace", g}, "--gold and --trace are both " + g},
		{[]string{"--gold", filepath.Join(dir, "missing", "g.jsonl")}, filepath.Join(dir, "missing", "g.jsonl") + ": cannot write in its directory: no such file or directory"},
		{[]string{"--gold", dir}, dir + ": is a directory"},
		{[]string{"extra", "--gold", g}, `unexpected argument "extra"`},
		{nil, "give --gold and/or --trace"},
	} {
		var out, errs bytes.Buffer
		if code := runGen(c.args, &out, &errs); code != exitBadInput || !strings.Contains(errs.String(), c.want) {
			t.Errorf("gen %q: exit %d, stderr %q, want %d saying %q", c.args, code, errs.String(), exitBadInput, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused runs left %v", entries)
	}
	var out, errs bytes.Buffer
	if code := runGen([]string{"--items", "5", "--gold", g}, &out, &errs); code != exitOK {
		t.Fatalf("gen --items 5: exit %d: %s", code, errs.String())
	}
	if data, err := os.ReadFile(g); err != nil || bytes.Count(data, []byte("\n")) != 5 {
		t.Errorf("gold of 5 items: %d lines (%v)", bytes.Count(data, []byte("\n")), err)
	}
}
