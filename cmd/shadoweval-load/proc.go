package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is a started process whose stdout is read in lines.
type child struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan struct{} // closed when the process has exited
	err   error         // of Wait, once done is closed
}

// startChild starts name with args; its stderr goes to logPath. The child
// gets SIGKILL if this process dies first.
func startChild(name, logPath string, path string, args ...string) (*child, error) {
	return startChildEnv(name, logPath, nil, path, args...)
}

// startChildEnv is startChild with env added to this process's environment.
func startChildEnv(name, logPath string, env []string, path string, args ...string) (*child, error) {
	cmd := exec.Command(path, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, stdin: stdin, lines: make(chan string, 16), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.err = cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// expect waits for a line starting with prefix and returns the rest.
func (c *child) expect(prefix string, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				<-c.done
				return "", fmt.Errorf("%s exited before %q: %v (see its log)", c.name, prefix, c.err)
			}
			if rest, found := strings.CutPrefix(line, prefix); found {
				return strings.TrimSpace(rest), nil
			}
		case <-t.C:
			return "", fmt.Errorf("%s: no %q after %v", c.name, prefix, timeout)
		}
	}
}

func (c *child) send(line string) error {
	_, err := io.WriteString(c.stdin, line+"\n")
	return err
}

// stop closes stdin and sends sig, then waits up to timeout before killing.
func (c *child) stop(sig os.Signal, timeout time.Duration) {
	c.stdin.Close()
	if sig != nil {
		c.cmd.Process.Signal(sig) //nolint:errcheck // it may be gone already
	}
	select {
	case <-c.done:
	case <-time.After(timeout):
		c.cmd.Process.Kill() //nolint:errcheck // last resort
		<-c.done
	}
}

// maxRSSKB is the peak RSS the kernel recorded for the exited child.
func (c *child) maxRSSKB() int64 {
	if c.cmd.ProcessState == nil {
		return 0
	}
	if ru, ok := c.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}

// ---- /proc ----

// procStatus reads VmRSS and VmHWM (kB) of pid.
func procStatus(pid int) (rssKB, hwmKB int64, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			rssKB = n
		case "VmHWM":
			hwmKB = n
		}
	}
	return rssKB, hwmKB, nil
}

// resetPeakRSS sets VmHWM back to the current RSS (clear_refs 5), so that
// the peak of a later phase can be read on its own.
func resetPeakRSS(pid int) {
	os.WriteFile(filepath.Join("/proc", strconv.Itoa(pid), "clear_refs"), []byte("5"), 0) //nolint:errcheck // best effort: the fixed-rate peak is then the whole run's
}

// clkTck is USER_HZ, 100 on every Linux this runs on.
const clkTck = 100

// procCPU is the user+system CPU time pid has used.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clkTck
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ---- the sidecar's /metrics ----

// scrape is what the tool reads of one /metrics answer.
type scrape struct {
	at          time.Time
	events      float64            // shadoweval_events_total{kind="trace"}, all arms and outcomes
	outcomes    map[string]float64 // the same by outcome
	dropped     float64            // shadoweval_nats_dropped_messages_total
	slow        float64            // shadoweval_nats_slow_consumer_events_total
	disconnects float64            // shadoweval_nats_disconnects_total
	goroutines  float64            // go_goroutines
	rejected    map[string]float64 // shadoweval_rejected_events_total by reason
	lag         []bucket           // shadoweval_event_lag_seconds classic buckets, cumulative
}

type bucket struct {
	le    float64
	count float64
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

func getScrape(addr string) (scrape, error) {
	s := scrape{outcomes: map[string]float64{}}
	resp, err := httpClient.Get("http://" + addr + "/metrics")
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	s.at = time.Now()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, ok := parseSample(line)
		if !ok {
			continue
		}
		switch name {
		case "shadoweval_events_total":
			if labels["kind"] == "trace" {
				s.events += value
				s.outcomes[labels["outcome"]] += value
			}
		case "shadoweval_nats_dropped_messages_total":
			s.dropped = value
		case "shadoweval_nats_slow_consumer_events_total":
			s.slow = value
		case "shadoweval_nats_disconnects_total":
			s.disconnects = value
		case "go_goroutines":
			s.goroutines = value
		case "shadoweval_rejected_events_total":
			if s.rejected == nil {
				s.rejected = map[string]float64{}
			}
			s.rejected[labels["reason"]] += value
		case "shadoweval_event_lag_seconds_bucket":
			le, err := strconv.ParseFloat(labels["le"], 64)
			if err == nil {
				s.lag = append(s.lag, bucket{le, value})
			}
		}
	}
	slices.SortFunc(s.lag, func(a, b bucket) int { return cmp.Compare(a.le, b.le) }) // no bound is NaN
	return s, sc.Err()
}

// parseSample reads `name{k="v",...} value` (no escapes in our labels).
func parseSample(line string) (name string, labels map[string]string, value float64, ok bool) {
	sp := strings.LastIndexByte(line, ' ')
	if sp < 0 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(line[sp+1:], 64)
	if err != nil {
		return "", nil, 0, false
	}
	head := line[:sp]
	labels = map[string]string{}
	if i := strings.IndexByte(head, '{'); i >= 0 {
		name = head[:i]
		rest := strings.TrimSuffix(head[i+1:], "}")
		for rest != "" {
			k, after, found := strings.Cut(rest, `="`)
			if !found {
				break
			}
			end := strings.IndexByte(after, '"')
			if end < 0 {
				break
			}
			labels[k] = after[:end]
			rest = strings.TrimPrefix(after[end+1:], ",")
		}
	} else {
		name = head
	}
	return name, labels, v, true
}

// lagQuantile is histogram_quantile(q) over the lag buckets observed
// between two scrapes: linear inside the bucket, as Prometheus does. inf is
// true when the quantile falls in the +Inf bucket (the value is then the
// largest finite bound).
func lagQuantile(before, after scrape, q float64) (v float64, n float64, inf bool) {
	if len(after.lag) == 0 {
		return math.NaN(), 0, false
	}
	prev := map[float64]float64{}
	for _, b := range before.lag {
		prev[b.le] = b.count
	}
	d := make([]bucket, len(after.lag))
	for i, b := range after.lag {
		d[i] = bucket{b.le, b.count - prev[b.le]}
	}
	total := d[len(d)-1].count
	if total <= 0 {
		return math.NaN(), 0, false
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range d {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				return lower, total, true
			}
			if b.count == below {
				return b.le, total, false
			}
			return lower + (b.le-lower)*(rank-below)/(b.count-below), total, false
		}
		lower, below = b.le, b.count
	}
	return lower, total, true
}

// waitReady polls GET /-/ready until it answers 200.
func waitReady(ctx context.Context, addr string, sidecar *child) error {
	for {
		resp, err := httpClient.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("sidecar not ready in time (see its log)")
		case <-sidecar.done:
			return fmt.Errorf("sidecar exited: %v (see its log)", sidecar.err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startAnalysis starts the canary analysis id (canary against live, the
// canary check set) on the sidecar at addr.
func startAnalysis(addr, id string) error {
	body := `{"id":"` + id + `","arm":"canary","baseline":"live","checks":"canary"}`
	resp, err := httpClient.Post("http://"+addr+"/api/v1/analyses", "application/json", strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("starting analysis %s: %w", id, err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("starting analysis %s: %s: %s", id, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// analysedEvents is how many events of both arms the analysis id on the
// sidecar at addr has taken.
func analysedEvents(addr, id string) (int64, error) {
	resp, err := httpClient.Get("http://" + addr + "/api/v1/analyses/" + id)
	if err != nil {
		return 0, fmt.Errorf("reading analysis %s: %w", id, err)
	}
	defer resp.Body.Close()
	var a struct {
		Events struct{ Arm, Baseline int64 } `json:"events"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&a); err != nil {
		return 0, fmt.Errorf("reading analysis %s: %w", id, err)
	}
	return a.Events.Arm + a.Events.Baseline, nil
}

// ---- statistics ----

func median(xs []float64) float64 {
	var s []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			s = append(s, x)
		}
	}
	if len(s) == 0 {
		return math.NaN()
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// slope is the least-squares slope of ys over xs.
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if n < 2 {
		return math.NaN()
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return math.NaN()
	}
	return (n*sxy - sx*sy) / den
}

// machineTicks reads the first line of /proc/stat: the ticks all CPUs spent
// idle (idle + iowait), stolen by the hypervisor, and in total.
func machineTicks() (idle, steal, total int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, 0
	}
	for i, s := range f[1:] {
		v, _ := strconv.ParseInt(s, 10, 64)
		total += v
		switch i {
		case 3, 4:
			idle += v
		case 7:
			steal += v
		}
	}
	return idle, steal, total
}
