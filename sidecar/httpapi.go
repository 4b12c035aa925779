package sidecar

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shadoweval/shadoweval/internal/httpjson"
	"github.com/shadoweval/shadoweval/sidecar/analysis"
	"github.com/shadoweval/shadoweval/window"
)

func (a *App) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{EnableOpenMetrics: true, Registry: a.reg}))
	mux.HandleFunc("GET /-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("Healthy\n"))
	})
	mux.HandleFunc("GET /-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if err := a.Ready(); err != nil {
			http.Error(w, "Not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("Ready\n"))
	})
	mux.HandleFunc("POST /-/reload", a.handleReload)
	mux.HandleFunc("GET /api/v1/windows", a.handleWindows)
	a.analysisRoutes(mux)
	a.statusRoutes(mux)
	// Profiles, as Prometheus and Alertmanager serve them: how an SRE finds
	// where a sidecar's CPU goes in place. Not the command line: it may
	// carry NATS credentials (--nats-url). Behind the admin token when one
	// is set, as a profile costs CPU.
	for path, h := range map[string]http.HandlerFunc{
		"GET /debug/pprof/":        pprof.Index,
		"GET /debug/pprof/profile": pprof.Profile,
		"GET /debug/pprof/symbol":  pprof.Symbol,
		"GET /debug/pprof/trace":   pprof.Trace,
	} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/debug/pprof/cmdline" {
				http.NotFound(w, r)
				return
			}
			if a.authorized(w, r) {
				h(w, r)
			}
		})
	}
	return mux
}

func (a *App) handleReload(w http.ResponseWriter, r *http.Request) {
	if !a.authorized(w, r) {
		return
	}
	if err := a.Reload(); err != nil {
		http.Error(w, "gold reload failed, previous gold set kept: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write([]byte("Gold reloaded\n"))
}

// WindowReport is one arm and window in GET /api/v1/windows (SPEC §8).
type WindowReport struct {
	Arm     string                 `json:"arm"`
	Window  string                 `json:"window"`
	Type    string                 `json:"type,omitempty"`
	Events  map[string]int64       `json:"events"`
	Metrics map[string]MetricValue `json:"metrics"`
	// Members, in a cluster, are the parts merged and their freshness.
	Members []analysis.MemberFreshness `json:"members,omitempty"`
}

// MetricValue is a metric's value (null when it has none) and sample count.
type MetricValue struct {
	Value   *float64 `json:"value"`
	Samples int64    `json:"samples"`
}

// Report builds the window report of arm and window at now ("" type: every
// content type together).
func (a *App) Report(arm, win, contentType string, now time.Time) (WindowReport, bool) {
	if a.cluster != nil {
		return a.cluster.report(arm, win, contentType, now)
	}
	// Counts before the snapshot: an event is counted after it is applied,
	// so the metrics then hold at least every event counted.
	counts := a.outcomes.Counts(arm, win, now)
	snap, ok := a.win.Snapshot(arm, win, contentType, now)
	if !ok {
		// An arm whose events all went unscored (late, unlabeled,
		// rejected, …) has no window data, and its counts are exactly
		// what its user needs to see.
		if contentType != "" || counts == (window.OutcomeCounts{}) || !a.hasWindow(win) {
			return WindowReport{}, false
		}
		metrics := map[string]MetricValue{}
		for _, name := range window.MetricNames(a.cfg.K) {
			metrics[name] = MetricValue{}
		}
		return WindowReport{Arm: arm, Window: win, Events: counts.Map(), Metrics: metrics}, true
	}
	return WindowReport{Arm: arm, Window: win, Type: contentType, Events: counts.Map(), Metrics: metricValues(snap.Metrics)}, true
}

// hasWindow says whether a window of that name is configured.
func (a *App) hasWindow(name string) bool {
	for _, s := range a.win.Specs() {
		if s.Name == name {
			return true
		}
	}
	return false
}

func metricValues(m map[string]window.Value) map[string]MetricValue {
	out := make(map[string]MetricValue, len(m))
	for name, v := range m {
		mv := MetricValue{Samples: v.Samples}
		if v.Valid {
			val := v.Value
			mv.Value = &val
		}
		out[name] = mv
	}
	return out
}

// reportArms are the arms the window reports cover: the cluster's in a
// cluster.
func (a *App) reportArms(now time.Time) []string {
	if a.cluster != nil {
		return a.cluster.arms(now)
	}
	return a.win.Arms()
}

func (a *App) handleWindows(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for name := range q {
		if !windowsParams[name] {
			// typ=code and the like would otherwise answer every type.
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("unknown parameter %q; the windows take arm, window and type", name)})
			return
		}
	}
	arm, win, typ := q.Get("arm"), q.Get("window"), q.Get("type")
	now := a.now()
	if arm != "" && win != "" {
		rep, ok := a.Report(arm, win, typ, now)
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": a.noReportReason(arm, win, typ, now)})
			return
		}
		writeJSON(w, http.StatusOK, rep)
		return
	}
	list := []WindowReport{}
	for _, armName := range a.reportArms(now) {
		if arm != "" && armName != arm {
			continue
		}
		for _, spec := range a.win.Specs() {
			if win != "" && spec.Name != win {
				continue
			}
			if rep, ok := a.Report(armName, spec.Name, typ, now); ok {
				list = append(list, rep)
			}
		}
	}
	writeJSON(w, http.StatusOK, list)
}

// windowsParams are the query parameters of GET /api/v1/windows.
var windowsParams = map[string]bool{"arm": true, "window": true, "type": true}

// noReportReason says why there is no report of arm, window and type.
func (a *App) noReportReason(arm, win, typ string, now time.Time) string {
	if !a.hasWindow(win) {
		var names []string
		for _, s := range a.win.Specs() {
			names = append(names, s.Name)
		}
		return "no window " + win + " (windows: " + strings.Join(names, ", ") + ")"
	}
	arms := a.reportArms(now)
	if typ != "" && slices.Contains(arms, arm) {
		return "no data for arm " + arm + ", window " + win + typeSuffix(typ) + " (types of the arm: " + strings.Join(a.win.Types(arm), ", ") + ")"
	}
	msg := "no data for arm " + arm + ", window " + win + typeSuffix(typ) + ": no event of arm " + arm + " in the window"
	if len(arms) == 0 {
		return msg + "; no arm has events yet"
	}
	return msg + " (arms with events: " + strings.Join(arms, ", ") + ")"
}

func typeSuffix(t string) string {
	if t == "" {
		return ""
	}
	return ", type " + t
}

func writeJSON(w http.ResponseWriter, status int, v any) { httpjson.Write(w, status, v) }
