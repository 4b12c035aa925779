// Package statuspage is the sidecar's `GET /` (SPEC §6): each canary
// analysis, then per arm each metric of a window with its value, sample
// count and a chart of its recent history, the gate states coloured, and
// the event counts.
//
// The page is rendered on the server with html/template: inline SVG charts,
// no JavaScript library, no external resource (it works offline and under a
// strict Content-Security-Policy, which it sends). A few lines of inline
// JavaScript fetch `GET /fragment` every 5 s and swap it in; without
// JavaScript a meta refresh reloads the page every 15 s.
//
// Wiring, in the sidecar:
//
//	hist := statuspage.NewHistory(statuspage.DefaultPoints)
//	finest := specs[0].Resolution
//	for _, s := range specs { // window.Windows.Specs()
//		hist.SetResolution(s.Name, s.Resolution)
//		finest = min(finest, s.Resolution)
//	}
//	go hist.Run(ctx, finest, src, now) // or hist.Collect(now(), src) from an existing ticker
//	h := statuspage.Handler(src, gates, hist, now,
//		statuspage.WithAnalyses(statuspage.AnalysisList(manager.List)))
//	mux.Handle("GET /{$}", h)
//	mux.Handle("GET /fragment", h)
//
// where src adapts the App (Arms from Windows.Arms, Windows from the spec
// names, Report from App.Report over every content type), gates adapts
// the gate engine's results (nil until there is one) and manager is the
// *analysis.Manager.
//
// The page leads with the canary analyses (SPEC §5.2), running ones first
// and ended ones collapsed: each with its verdict and reason, and per check
// its interval now against the tolerance (or threshold), how the interval
// narrowed over the analysis' recorded judgements (drawn on the same value
// range, so early wide intervals run off the plot), and both arms' values
// of its metric on one axis.
package statuspage
