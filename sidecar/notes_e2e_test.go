package sidecar_test

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestNotesURLs: every URL the Helm chart's NOTES.txt gives a user answers
// 200 from a freshly started sidecar, before any event (the chart's own
// tests check the hosts, ports and commands around them).
func TestNotesURLs(t *testing.T) {
	t.Parallel()
	notes, err := os.ReadFile("../charts/shadoweval/templates/NOTES.txt")
	if err != nil {
		t.Fatal(err)
	}
	host := regexp.MustCompile(`http://(127\.0\.0\.1:\{\{ \.Values\.containerPort \}\}|\{\{ \$fullname \}\}\.\{\{ \.Release\.Namespace \}\}\.svc:\{\{ \.Values\.service\.port \}\})(/[^\s'")]*)?`)
	found := host.FindAllStringSubmatch(string(notes), -1)
	if len(found) < 4 {
		t.Fatalf("NOTES.txt gives %d URLs, want the status page, the API and the in-cluster address", len(found))
	}
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl"})
	for _, m := range found {
		path := strings.NewReplacer("<id>", "notes-check").Replace(m[2])
		if path == "" {
			path = "/"
		}
		if code, body := h.Get(path); code != http.StatusOK {
			t.Errorf("NOTES.txt URL %s: GET %s answers %d: %s", m[0], path, code, body)
		}
	}
}
