package readmecheck

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shadoweval/shadoweval/testenv"
)

// repoRoot is the repository this package is in.
const repoRoot = "../.."

// sections whose shell blocks a new user runs first, in README order.
var sections = []string{"Set-up", "Running the sidecar"}

// natsCLI is the nats CLI the README names for the gold bucket.
const natsCLI = "github.com/nats-io/natscli/nats@v0.5.0"

// block is a fenced code block of the README.
type block struct {
	section string // the "## " heading it is under
	lang    string
	line    int // of its first line of code
	code    string
}

// readmeBlocks reads the fenced code blocks of the README with the "## "
// section each is in; a heading inside a code block is no heading.
func readmeBlocks(t *testing.T, readme []byte) []block {
	t.Helper()
	var blocks []block
	var cur *block
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(readme))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &block{section: section, lang: strings.TrimSpace(strings.TrimPrefix(line, "```")), line: n + 1}
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		case strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
		}
	}
	if cur != nil {
		t.Fatalf("README.md: the code block of line %d is not closed", cur.line)
	}
	return blocks
}

// TestReadmeCommands runs the shell blocks of the README's set-up and
// "Running the sidecar" sections, in order, as one script in a fresh copy
// of the repository, the way a new user copies them into a shell. Any
// command that fails fails the test. The script waits on conditions
// (curl --retry until /-/ready answers 200, `wait` for a stopped sidecar),
// never on time.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the README's commands build the binary and run the demo")
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var script strings.Builder
	script.WriteString("set -euo pipefail\nset -x\n")
	for _, sec := range sections {
		n := 0
		for _, b := range readmeBlocks(t, readme) {
			if b.section != sec || (b.lang != "sh" && b.lang != "bash" && b.lang != "shell") {
				continue
			}
			n++
			script.WriteString("\n# README.md:" + itoa(b.line) + " (" + sec + ")\n" + b.code)
		}
		if n == 0 {
			t.Fatalf("README.md has no shell block under %q: the section was renamed or lost its commands", "## "+sec)
		}
	}

	bash := testenv.NeedBinary(t, "bash", "bash")
	testenv.NeedBinary(t, "curl", "curl")
	// The commands use the sidecar's and NATS's default ports.
	for _, addr := range []string{":9464", "127.0.0.1:4222"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			msg := "port " + addr + " is in use, and the README's commands use it: " + err.Error()
			if testenv.InCI() {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		ln.Close()
	}
	path := os.Getenv("PATH")
	if _, err := exec.LookPath("nats"); err != nil {
		path = installNATSCLI(t) + string(os.PathListSeparator) + path
	}

	dir := filepath.Join(t.TempDir(), "shadoweval")
	copyRepo(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", script.String())
	cmd.Dir = dir
	cmd.Env = environ(path)
	// Its own process group: whatever the script left running in the
	// background is stopped with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A sidecar a failed script left in the background holds the output
	// pipe: stop waiting for it shortly after bash exits.
	cmd.WaitDelay = 5 * time.Second
	var out testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Fatalf("the README's commands failed: %v\n%s", err, testenv.Tail(out.String(), 20000))
	}
	t.Logf("the README's commands ran:\n%s", testenv.Tail(out.String(), 4000))
}

// environ is this process's environment for the script: PATH as given,
// no NATS_URL (the README's commands go to the default one), no CI-only
// colour or terminal settings.
func environ(path string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "NATS_URL", "NATS_CONTEXT":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH="+path, "NO_COLOR=1")
}

// installNATSCLI installs the nats CLI the README names, once per machine
// (the build cache makes a second install quick), and returns its
// directory.
func installNATSCLI(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "shadoweval-readmecheck", "natscli-v0.5.0")
	if _, err := os.Stat(filepath.Join(bin, "nats")); err == nil {
		return bin
	}
	cmd := exec.Command("go", "install", natsCLI)
	cmd.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s: %v\n%s", natsCLI, err, out)
	}
	return bin
}

// copyRepo copies the repository's files (git's tracked and untracked but
// not ignored ones; every file but .git when git cannot tell) into dir.
func copyRepo(t *testing.T, dir string) {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	git := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	git.Dir = root
	if out, err := git.Output(); err == nil {
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
	} else {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if d.IsDir() && (d.Name() == ".git" || rel == "bin" || rel == ".testreport") {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() {
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		src := filepath.Join(root, f)
		info, err := os.Lstat(src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree, not yet in git
		}
		if err != nil {
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// TestReadmeBlocks: the block parser keeps code out of the section
// headings and finds the blocks' languages and lines.
func TestReadmeBlocks(t *testing.T) {
	readme := "# t\n## Set-up\ntext\n```sh\nmake build\n## not a heading\n```\n## Other\n```go\nx\n```\n"
	got := readmeBlocks(t, []byte(readme))
	if len(got) != 2 || got[0] != (block{"Set-up", "sh", 5, "make build\n## not a heading\n"}) || got[1].section != "Other" || got[1].lang != "go" {
		t.Errorf("blocks %+v", got)
	}
}
