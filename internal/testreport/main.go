// Command testreport reads `go test -json` and prints what a person needs
// of it: a line per package, the output of each failing test, and at the
// end every skipped test with its reason, then the counts. `make test`
// runs every go test through it, each recording its results (-record), and
// ends with the summary of them all (-summary), so that a test that did
// not run is never silent.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string // build-output and build-fail
}

// record is one run's results, a JSON line of a -record file.
type record struct {
	Name    string `json:"name"`
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	Skipped []skip `json:"skipped"`
	Broken  bool   `json:"broken"` // a package failed to build or failed outside any test
}

type skip struct {
	Package string `json:"package"`
	Test    string `json:"test"`
	Reason  string `json:"reason"`
}

func main() {
	name := flag.String("name", "go test", "what this run is, in the summary (unit, race, chart, ...)")
	recordTo := flag.String("record", "", "write this run's results to this file too, for -summary")
	summary := flag.Bool("summary", false, "print the summary of the -record files given as arguments instead of reading go test -json")
	flag.Parse()
	if *summary {
		os.Exit(summarize(os.Stdout, flag.Args()))
	}
	r, err := report(os.Stdin, os.Stdout, *name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
		os.Exit(2)
	}
	printSummary(os.Stdout, []record{r})
	if *recordTo != "" {
		data, _ := json.Marshal(r)
		if err := os.WriteFile(*recordTo, append(data, '\n'), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
			os.Exit(2)
		}
	}
	if r.Failed > 0 || r.Broken {
		os.Exit(1)
	}
}

type testKey struct{ pkg, test string }

// report reads go test -json from in and writes the package lines and
// failures to out as they come.
func report(in io.Reader, out io.Writer, name string) (record, error) {
	r := record{Name: name, Skipped: []skip{}}
	outputs := map[testKey][]string{} // a test's output; a package's under test ""
	failedIn := map[string]bool{}     // packages with a failed test
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// go test writes some errors as plain text (a bad flag, a
			// package that does not exist).
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "build-fail":
			r.Broken = true
		case "output":
			k := testKey{e.Package, e.Test}
			outputs[k] = append(outputs[k], e.Output)
		case "pass", "fail", "skip":
			k := testKey{e.Package, e.Test}
			if e.Test == "" {
				// A package that failed with no failing test failed
				// outside its tests: a panic, a timeout, TestMain.
				if packageEnd(out, e, outputs[k]) && !failedIn[e.Package] {
					r.Broken = true
				}
				delete(outputs, k)
				continue
			}
			switch e.Action {
			case "pass":
				r.Passed++
			case "fail":
				r.Failed++
				failedIn[e.Package] = true
				fmt.Fprintf(out, "--- FAIL: %s (%s)\n%s", e.Test, e.Package, strings.Join(testOutput(outputs[k]), ""))
			case "skip":
				r.Skipped = append(r.Skipped, skip{Package: e.Package, Test: e.Test, Reason: skipReason(outputs[k])})
			}
			delete(outputs, k)
		}
	}
	return r, sc.Err()
}

// packageEnd prints a package's line; true when it failed outside its
// tests (a panic in TestMain, a build error, a timeout).
func packageEnd(out io.Writer, e event, output []string) bool {
	elapsed := time.Duration(e.Elapsed * float64(time.Second)).Round(10 * time.Millisecond)
	switch e.Action {
	case "pass":
		fmt.Fprintf(out, "ok   %s %s\n", e.Package, elapsed)
	case "skip":
		fmt.Fprintf(out, "?    %s [no test files]\n", e.Package)
	default:
		// Its output outside tests holds the reason (tests' own output
		// was printed with each failure).
		fmt.Fprintf(out, "FAIL %s %s\n", e.Package, elapsed)
		for _, l := range output {
			if !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- ") {
				fmt.Fprint(out, l)
			}
		}
		return true
	}
	return false
}

// testOutput is a test's output without the framing lines of go test -v.
func testOutput(lines []string) []string {
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "=== RUN") || strings.HasPrefix(t, "=== PAUSE") || strings.HasPrefix(t, "=== CONT") || strings.HasPrefix(t, "=== NAME") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// skipReason is what a skipped test said, on one line.
func skipReason(lines []string) string {
	var parts []string
	for _, l := range testOutput(lines) {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " / ")
}

// summarize prints the summary of the records in files.
func summarize(out io.Writer, files []string) int {
	var all []record
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(out, "testreport: no results in %s (that run did not finish)\n", f)
			all = append(all, record{Name: f, Broken: true})
			continue
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "testreport: %v\n", err)
			return 2
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var r record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				fmt.Fprintf(os.Stderr, "testreport: %s: %v\n", f, err)
				return 2
			}
			all = append(all, r)
		}
	}
	fmt.Fprintln(out, "\n=== all test runs")
	printSummary(out, all)
	for _, r := range all {
		if r.Failed > 0 || r.Broken {
			return 1
		}
	}
	return 0
}

// printSummary lists the skipped tests with their reasons and ends with
// the counts, "N passed, N failed, N skipped".
func printSummary(out io.Writer, runs []record) {
	var skipped []skip
	var runOf []string
	passed, failed := 0, 0
	for _, r := range runs {
		passed += r.Passed
		failed += r.Failed
		for _, s := range r.Skipped {
			skipped = append(skipped, s)
			runOf = append(runOf, r.Name)
		}
	}
	idx := make([]int, len(skipped))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		sa, sb := skipped[idx[a]], skipped[idx[b]]
		if sa.Package != sb.Package {
			return sa.Package < sb.Package
		}
		return sa.Test < sb.Test
	})
	if len(skipped) == 0 {
		fmt.Fprintln(out, "\nSkipped tests: none.")
	} else {
		fmt.Fprintf(out, "\nSkipped tests (%d), with their reasons:\n", len(skipped))
		for _, i := range idx {
			s := skipped[i]
			fmt.Fprintf(out, "  [%s] %s %s: %s\n", runOf[i], s.Package, s.Test, s.Reason)
		}
	}
	word := "tests:"
	if len(runs) > 1 {
		word = "total:"
	}
	fmt.Fprintf(out, "%s %d passed, %d failed, %d skipped\n", word, passed, failed, len(skipped))
}
