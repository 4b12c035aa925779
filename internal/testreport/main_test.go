package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/testenv"
)

// A run with a pass, a failure, a skip and a package with no tests: the
// failure's output is shown, the skip is listed with its reason, and the
// counts close the report.
func TestReport(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"start","Package":"p/a"}`,
		`{"Action":"run","Package":"p/a","Test":"TestOK"}`,
		`{"Action":"output","Package":"p/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Action":"pass","Package":"p/a","Test":"TestOK","Elapsed":0.01}`,
		`{"Action":"output","Package":"p/a","Test":"TestBad","Output":"=== RUN   TestBad\n"}`,
		`{"Action":"output","Package":"p/a","Test":"TestBad","Output":"    a_test.go:9: got 1, want 2\n"}`,
		`{"Action":"output","Package":"p/a","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}`,
		`{"Action":"fail","Package":"p/a","Test":"TestBad","Elapsed":0}`,
		`{"Action":"output","Package":"p/a","Test":"TestTool","Output":"=== RUN   TestTool\n"}`,
		`{"Action":"output","Package":"p/a","Test":"TestTool","Output":"    testenv.go:60: promtool not installed (apt-get install prometheus)\n"}`,
		`{"Action":"output","Package":"p/a","Test":"TestTool","Output":"--- SKIP: TestTool (0.00s)\n"}`,
		`{"Action":"skip","Package":"p/a","Test":"TestTool","Elapsed":0}`,
		`{"Action":"output","Package":"p/a","Output":"FAIL\n"}`,
		`{"Action":"fail","Package":"p/a","Elapsed":0.5}`,
		`{"Action":"skip","Package":"p/b","Elapsed":0}`,
		`not json: a go test error`,
	}, "\n")
	var out bytes.Buffer
	r, err := report(strings.NewReader(in), &out, "unit")
	if err != nil {
		t.Fatal(err)
	}
	if r.Passed != 1 || r.Failed != 1 || len(r.Skipped) != 1 || r.Broken {
		t.Errorf("record %+v", r)
	}
	if want := (skip{"p/a", "TestTool", "testenv.go:60: promtool not installed (apt-get install prometheus)"}); r.Skipped[0] != want {
		t.Errorf("skip %+v, want %+v", r.Skipped[0], want)
	}
	for _, want := range []string{"--- FAIL: TestBad (p/a)\n    a_test.go:9: got 1, want 2\n", "FAIL p/a 500ms\n", "?    p/b [no test files]\n", "not json: a go test error\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}

	// The summary of several runs lists every skip and adds up.
	dir := t.TempDir()
	var files []string
	for i, rec := range []string{
		`{"name":"unit","passed":3,"failed":0,"skipped":[{"package":"p/a","test":"TestTool","reason":"promtool not installed"}]}`,
		`{"name":"chart","passed":2,"failed":0,"skipped":[]}`,
	} {
		f := testenv.WriteFile(t, dir, string(rune('a'+i)), []byte(rec+"\n"))
		files = append(files, f)
	}
	out.Reset()
	if code := summarize(&out, files); code != 0 {
		t.Errorf("exit %d", code)
	}
	want := "  [unit] p/a TestTool: promtool not installed\ntotal: 5 passed, 0 failed, 1 skipped\n"
	if !strings.HasSuffix(out.String(), want) {
		t.Errorf("summary:\n%s\nwant it to end with:\n%s", out.String(), want)
	}
	// A run that left no record did not finish: the summary fails.
	if code := summarize(&out, []string{filepath.Join(dir, "missing")}); code == 0 {
		t.Error("a missing record passes")
	}
}
