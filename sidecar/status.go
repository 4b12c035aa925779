package sidecar

import (
	"context"
	"net/http"
	"time"

	"github.com/shadoweval/shadoweval/sidecar/gates"
	"github.com/shadoweval/shadoweval/sidecar/statuspage"
)

// statusSource adapts the App to the status page (all content types
// together).
type statusSource struct{ a *App }

// StatusSource is the statuspage.Source the App mounts at /: its arms,
// windows and reports over all content types together, at the App's now.
func (a *App) StatusSource() statuspage.Source { return statusSource{a} }

func (s statusSource) Arms() []string { return s.a.reportArms(s.a.now()) }

func (s statusSource) Windows() []string {
	var names []string
	for _, sp := range s.a.win.Specs() {
		names = append(names, sp.Name)
	}
	return names
}

func (s statusSource) Report(arm, window string) (map[string]statuspage.Value, map[string]int64, bool) {
	rep, ok := s.a.Report(arm, window, "", s.a.now())
	if !ok {
		return nil, nil, false
	}
	m := make(map[string]statuspage.Value, len(rep.Metrics))
	for name, v := range rep.Metrics {
		sv := statuspage.Value{Samples: v.Samples}
		if v.Value != nil {
			sv.Value, sv.Valid = *v.Value, true
		}
		m[name] = sv
	}
	return m, rep.Events, true
}

// GateStates gives the gate engine's results for arm, every window.
func (s statusSource) GateStates(arm string) []gates.Result {
	return s.a.gating.engine.Results(arm, "")
}

// statusRoutes mounts the status page at / and records the history its
// charts draw, once per finest window resolution.
func (a *App) statusRoutes(mux *http.ServeMux) {
	a.history = statuspage.NewHistory(0)
	every := 10 * time.Second
	for _, s := range a.win.Specs() {
		a.history.SetResolution(s.Name, s.Resolution)
		every = min(every, s.Resolution)
	}
	a.historyEvery = every
	src := statusSource{a}
	h := statuspage.Handler(src, src, a.history, a.now,
		statuspage.WithAnalyses(statusAnalyses{a}))
	mux.Handle("GET /{$}", h)
	mux.Handle("GET /fragment", h)
}

func (a *App) historyLoop(ctx context.Context) {
	a.history.Run(ctx, a.historyEvery, statusSource{a}, a.now)
}

// statusAnalyses gives the page the analyses with their results as the
// verdict endpoints give them (merged over the members in a cluster).
type statusAnalyses struct{ a *App }

func (s statusAnalyses) Analyses() []statuspage.AnalysisState {
	list := s.a.analyses.m.List()
	out := make([]statuspage.AnalysisState, 0, len(list))
	for _, an := range list {
		out = append(out, statuspage.AnalysisState{Result: s.a.analysisResult(an), History: an.History()})
	}
	return out
}
