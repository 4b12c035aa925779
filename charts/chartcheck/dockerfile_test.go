package chartcheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	Line  int    // first line
	Cmd   string // upper case: FROM, RUN, ...
	Flags []string
	Args  string // after the flags
	Stage int    // index of the stage (FROM) it belongs to
}

// exec decodes an exec-form (JSON array) argument list.
func (in instruction) exec(t *testing.T) []string {
	t.Helper()
	var list []string
	if err := json.Unmarshal([]byte(in.Args), &list); err != nil {
		t.Errorf("Dockerfile:%d: %s %s is not in exec form (a JSON array): %v", in.Line, in.Cmd, in.Args, err)
	}
	return list
}

// parseDockerfile reads the instructions the tests look at; it handles
// comments, parser directives, backslash continuations and --flags, which
// is all this Dockerfile uses (no heredocs, no escape directive).
func parseDockerfile(t *testing.T, file string) []instruction {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var list []instruction
	stage := -1
	sc := bufio.NewScanner(bytes.NewReader(data))
	lineNo := 0
	var cur strings.Builder
	start := 0
	flush := func() {
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		if text == "" {
			return
		}
		cmd, rest, _ := strings.Cut(text, " ")
		in := instruction{Line: start, Cmd: strings.ToUpper(cmd)}
		rest = strings.TrimSpace(rest)
		for strings.HasPrefix(rest, "--") {
			var flag string
			flag, rest, _ = strings.Cut(rest, " ")
			in.Flags = append(in.Flags, flag)
			rest = strings.TrimSpace(rest)
		}
		in.Args = rest
		if in.Cmd == "FROM" {
			stage++
		}
		in.Stage = stage
		list = append(list, in)
	}
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue // comments and parser directives; continuation goes on
		}
		if cur.Len() == 0 {
			start = lineNo
		}
		if strings.HasSuffix(trimmed, `\`) {
			cur.WriteString(strings.TrimSuffix(trimmed, `\`) + " ")
			continue
		}
		cur.WriteString(trimmed)
		flush()
	}
	flush()
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return list
}

func ofStage(list []instruction, stage int, cmd string) []instruction {
	var out []instruction
	for _, in := range list {
		if in.Stage == stage && in.Cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// TestDockerfile checks the Dockerfile against the chart: the non-root
// user, the port, the entrypoint and command, and the paths.
func TestDockerfile(t *testing.T) {
	ins := parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
	v := loadValues(t)
	froms := slices.DeleteFunc(slices.Clone(ins), func(in instruction) bool { return in.Cmd != "FROM" })
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got %d stages", len(froms))
	}
	last := len(froms) - 1

	// The builder: golang:1.26, static and trimmed.
	builder := strings.Fields(froms[0].Args)
	if len(builder) != 3 || !strings.HasPrefix(builder[0], "golang:1.26") || !strings.EqualFold(builder[1], "AS") {
		t.Errorf("first stage %q: want FROM golang:1.26 AS <name>", froms[0].Args)
	}
	var build string
	for _, in := range ofStage(ins, 0, "RUN") {
		if strings.Contains(in.Args, "go build") {
			build = in.Args
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w"`, "-o /out/shadoweval", "./cmd/shadoweval"} {
		if !strings.Contains(build, want) {
			t.Errorf("builder's go build %q lacks %s", build, want)
		}
	}

	// The final stage: distroless (CA certificates included) or scratch
	// with the certificates copied in.
	base := strings.Fields(froms[last].Args)[0]
	distroless := regexp.MustCompile(`^gcr\.io/distroless/static(-debian\d+)?:nonroot$`).MatchString(base)
	if !distroless && base != "scratch" {
		t.Errorf("final stage FROM %s: want gcr.io/distroless/static-debian12:nonroot or scratch", base)
	}
	copies := ofStage(ins, last, "COPY")
	if !distroless && !slices.ContainsFunc(copies, func(in instruction) bool { return strings.Contains(in.Args, "/etc/ssl/certs") }) {
		t.Errorf("FROM scratch without CA certificates")
	}

	// USER: numeric, not root, the chart's user.
	users := ofStage(ins, last, "USER")
	if len(users) != 1 {
		t.Fatalf("final stage: want one USER, got %d", len(users))
	}
	uid, gid, ok := strings.Cut(users[0].Args, ":")
	u, err1 := strconv.Atoi(uid)
	g, err2 := strconv.Atoi(gid)
	if !ok || err1 != nil || err2 != nil || u == 0 || g == 0 {
		t.Errorf("USER %q: want a numeric non-root uid:gid (runAsNonRoot needs a numeric user)", users[0].Args)
	}
	for _, p := range []string{"podSecurityContext.runAsUser", "securityContext.runAsUser"} {
		if v.integer(p) != u {
			t.Errorf("USER uid %d, chart %s %d", u, p, v.integer(p))
		}
	}
	for _, p := range []string{"podSecurityContext.runAsGroup", "securityContext.runAsGroup"} {
		if v.integer(p) != g {
			t.Errorf("USER gid %d, chart %s %d", g, p, v.integer(p))
		}
	}

	// EXPOSE: the chart's port.
	exposes := ofStage(ins, last, "EXPOSE")
	if len(exposes) != 1 || strings.TrimSuffix(exposes[0].Args, "/tcp") != strconv.Itoa(v.integer("containerPort")) {
		t.Errorf("EXPOSE %v: want exactly the chart's containerPort %d", exposes, v.integer("containerPort"))
	}
	if v.integer("service.port") != v.integer("containerPort") {
		t.Errorf("chart service.port %d and containerPort %d differ by default", v.integer("service.port"), v.integer("containerPort"))
	}

	// No HEALTHCHECK: Kubernetes probes instead.
	if slices.ContainsFunc(ins, func(in instruction) bool { return in.Cmd == "HEALTHCHECK" }) {
		t.Errorf("HEALTHCHECK: the chart's probes do that job")
	}

	// ENTRYPOINT and CMD in exec form; the chart runs the same.
	eps, cmds := ofStage(ins, last, "ENTRYPOINT"), ofStage(ins, last, "CMD")
	if len(eps) != 1 || len(cmds) != 1 {
		t.Fatalf("final stage: want one ENTRYPOINT and one CMD")
	}
	ep, cmd := eps[0].exec(t), cmds[0].exec(t)
	if !slices.Equal(ep, []string{"/shadoweval"}) {
		t.Errorf("ENTRYPOINT %q, want [/shadoweval]", ep)
	}
	if !slices.Equal(cmd, []string{"run", "--config", configPath}) {
		t.Errorf("CMD %q, want [run --config %s]", cmd, configPath)
	}
	out, err := helmTemplate(t, chartDir, nil, "--show-only", "templates/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dep := decodeAll(t, out)[0].Obj.(*appsv1.Deployment)
	ctr := dep.Spec.Template.Spec.Containers[0]
	if len(ctr.Command) != 0 || len(ctr.Args) < len(cmd) || !slices.Equal(ctr.Args[:len(cmd)], cmd) {
		t.Errorf("chart container command %q args %q: want the image's ENTRYPOINT and its CMD %q", ctr.Command, ctr.Args, cmd)
	}

	// The files of the image: the binary, the default configuration at the
	// chart's config path, an empty gold set at the chart's gold path, and
	// the data directory owned by the user.
	has := func(stage int, cmd string, flags []string, args string) bool {
		return slices.ContainsFunc(ofStage(ins, stage, cmd), func(in instruction) bool {
			for _, f := range flags {
				if !slices.Contains(in.Flags, f) {
					return false
				}
			}
			return strings.Contains(in.Args, args)
		})
	}
	goldPath := path.Join(v.str("gold.mountPath"), v.str("gold.fileName"))
	from := "--from=" + builder[2]
	for _, c := range []struct {
		stage int
		cmd   string
		flags []string
		args  string
	}{
		{last, "COPY", []string{from}, "/out/shadoweval /shadoweval"},
		{0, "RUN", nil, "cp docker/config.yaml /out" + configPath},
		{0, "RUN", nil, ": > /out" + goldPath},
		{last, "COPY", []string{from}, "/out/etc/shadoweval " + path.Dir(configPath)},
		{last, "COPY", []string{from, "--chown=" + users[0].Args}, "/out/data " + v.str("data.mountPath")},
	} {
		if !has(c.stage, c.cmd, c.flags, c.args) {
			t.Errorf("Dockerfile: no %s %s %s in stage %d", c.cmd, strings.Join(c.flags, " "), c.args, c.stage)
		}
	}

	// docker/config.yaml: valid, and naming the chart's paths.
	data, err := os.ReadFile(filepath.Join(repoRoot, "docker", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := configCheck(t, "config.yaml", data); err != nil {
		t.Fatalf("docker/config.yaml: %v", err)
	}
	var cfg values
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if got := cfg.str("gold.file"); got != goldPath {
		t.Errorf("docker/config.yaml gold.file %q, chart %q", got, goldPath)
	}
	if sd := cfg.str("nats.store_dir"); !under(sd, v.str("data.mountPath")) {
		t.Errorf("docker/config.yaml nats.store_dir %q is not under the data directory %s", sd, v.str("data.mountPath"))
	}
	if l := cfg.str("http.listen"); l != "" && l != ":"+strconv.Itoa(v.integer("containerPort")) {
		t.Errorf("docker/config.yaml http.listen %q does not match EXPOSE", l)
	}
	if cfg.str("nats.url") != "" {
		t.Errorf("docker/config.yaml sets nats.url: the image should work alone")
	}
}

// TestDockerignore: the build context holds every file `go build
// ./cmd/shadoweval` reads, and leaves the repository's bulk out.
func TestDockerignore(t *testing.T) {
	f, err := os.Open(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := readDockerignore(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	excluded := func(rel string) bool {
		ok, err := pm.MatchesOrParentMatches(filepath.ToSlash(rel))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	cmd := exec.Command("go", "list", "-e", "-deps", "-json=Dir,Module,GoFiles,CgoFiles,SFiles,EmbedFiles,IgnoredGoFiles", "./cmd/shadoweval")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	needed := []string{"go.mod", "go.sum", "docker/config.yaml"}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			Dir                                   string
			Module                                *struct{ Main bool }
			GoFiles, CgoFiles, SFiles, EmbedFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || !p.Module.Main {
			continue
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.SFiles, p.EmbedFiles} {
			for _, f := range list {
				needed = append(needed, filepath.Join(rel, f))
			}
		}
	}
	if len(needed) < 10 {
		t.Fatalf("go list found only %q", needed)
	}
	for _, f := range needed {
		if excluded(f) {
			t.Errorf(".dockerignore excludes %s, which the image build needs", f)
		}
	}
	for _, f := range []string{".git/config", "bin/shadoweval", "charts/shadoweval/values.yaml", "sidecar.test", "shadoweval", "sidecar/testdata/gold_v1.jsonl"} {
		if !excluded(f) {
			t.Errorf(".dockerignore lets %s into the build context", f)
		}
	}
}

// readDockerignore reads the patterns the way docker does: one per line,
// # comments, surrounding space trimmed, cleaned, leading / dropped.
func readDockerignore(f *os.File) ([]string, error) {
	var patterns []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.TrimSpace(sc.Text())
		if p == "" || strings.HasPrefix(p, "#") {
			continue
		}
		invert := strings.HasPrefix(p, "!")
		p = strings.TrimSpace(strings.TrimPrefix(p, "!"))
		p = filepath.ToSlash(filepath.Clean(p))
		p = strings.TrimPrefix(p, "/")
		if invert {
			p = "!" + p
		}
		patterns = append(patterns, p)
	}
	return patterns, sc.Err()
}
