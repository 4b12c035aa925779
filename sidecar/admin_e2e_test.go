package sidecar_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/testenv"
)

// TestAdminToken: with http.admin_token_file set, POST /-/reload wants
// "Authorization: Bearer <token>" (401 otherwise, with WWW-Authenticate);
// the read-only endpoints stay open; the token never reaches the log.
func TestAdminToken(t *testing.T) {
	t.Parallel()
	const token = "s3cret-Admin-token"
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil { // a Secret's trailing newline
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	// Registered before the app starts, this runs after it stops.
	t.Cleanup(func() {
		if strings.Contains(logs.String(), token) {
			t.Errorf("the admin token is in the log:\n%s", logs.String())
		}
	})
	h := startApp(t, appOptions{embedded: true, goldFile: "testdata/gold_v1.jsonl", logs: logs,
		configure: func(cfg *config.Config) { cfg.HTTP.AdminTokenFile = tokenFile }})
	gold := h.GoldPath

	for _, auth := range []string{"", "Bearer", "Bearer ", "Bearer wrong", "Bearer " + token + "x", "Basic " + token, token, "Bearer " + token[:len(token)-1]} {
		hdr := http.Header{}
		if auth != "" {
			hdr.Set("Authorization", auth)
		}
		code, resp, body := h.Do(http.MethodPost, "/-/reload", hdr, "", "")
		if code != http.StatusUnauthorized || !strings.HasPrefix(resp.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: %d %q (WWW-Authenticate %q), want 401", auth, code, body, resp.Get("WWW-Authenticate"))
		}
		if strings.Contains(string(body), token) {
			t.Errorf("the 401 body shows the token: %s", body)
		}
	}
	for _, auth := range []string{"Bearer " + token, "bearer " + token, "BEARER  " + token + " "} {
		code, _, body := h.Do(http.MethodPost, "/-/reload", http.Header{"Authorization": {auth}}, "", "")
		if code != http.StatusOK {
			t.Errorf("Authorization %q: %d %s, want 200", auth, code, body)
		}
	}
	h.CheckMetric("shadoweval_gold_reloads_total", map[string]string{"result": "success"}, 4) // start + 3
	for _, path := range []string{"/-/ready", "/-/healthy", "/metrics", "/api/v1/windows", "/api/v1/verdict?arm=canary"} {
		if code, body := h.Get(path); code != http.StatusOK {
			t.Errorf("GET %s without a token: %d %s", path, code, body)
		}
	}
	// Profiles want the token too; the command line is never served.
	for _, c := range []struct {
		path, auth string
		want       int
	}{
		{"/debug/pprof/", "", http.StatusUnauthorized},
		{"/debug/pprof/heap", "Bearer wrong", http.StatusUnauthorized},
		{"/debug/pprof/", "Bearer " + token, http.StatusOK},
		{"/debug/pprof/goroutine?debug=1", "Bearer " + token, http.StatusOK},
		{"/debug/pprof/cmdline", "Bearer " + token, http.StatusNotFound},
	} {
		code, _, body := h.Do(http.MethodGet, c.path, http.Header{"Authorization": {c.auth}}, "", "")
		if code != c.want {
			t.Errorf("GET %s with %q: %d, want %d", c.path, c.auth, code, c.want)
		}
		if strings.Contains(string(body), gold) {
			t.Errorf("GET %s shows the command line", c.path)
		}
	}
}

// TestPprofOpen: without an admin token the profiles are open, as in
// Prometheus; the command line (it may hold NATS credentials) is not
// served.
func TestPprofOpen(t *testing.T) {
	t.Parallel()
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl"})
	if code, body := h.Get("/debug/pprof/"); code != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Errorf("GET /debug/pprof/: %d %.200s", code, body)
	}
	if code, body := h.Get("/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Errorf("GET /debug/pprof/heap: %d %.200s", code, body)
	}
	if code, _ := h.Get("/debug/pprof/cmdline"); code != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/cmdline: %d, want 404", code)
	}
}

// TestAdminTokenFile: a token file that cannot be read, or is empty, stops
// the start with the file's name, and no token without one configured.
func TestAdminTokenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := testenv.WriteFile(t, dir, "empty", []byte(" \n"))
	for _, c := range []struct{ file, want string }{
		{filepath.Join(dir, "missing"), "http.admin_token_file " + filepath.Join(dir, "missing") + ": no such file"},
		{empty, "the file is empty"},
	} {
		cfg := testConfig(t, "nats://127.0.0.1:1", filepath.Join(dir, "gold.jsonl"))
		cfg.HTTP.AdminTokenFile = c.file
		_, err := sidecar.New(sidecar.Options{Config: cfg})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("token file %s: %v, want %q", c.file, err, c.want)
		}
	}

	// None configured: reload is open (the default).
	h := startApp(t, appOptions{goldFile: "testdata/gold_v1.jsonl"})
	if code, body := h.Post("/-/reload"); code != http.StatusOK {
		t.Errorf("POST /-/reload with no token configured: %d %s", code, body)
	}
}
