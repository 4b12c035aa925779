package gates

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"path"
	"strings"
	"time"
)

// DefaultVerdictArm is the arm a verdict request without one asks about.
const DefaultVerdictArm = "canary"

// Body limits of the POST handlers.
const (
	maxFlaggerBody = 1 << 20
	maxKayentaBody = 64 << 20 // Kayenta sends every metric's time series
)

// VerdictResponse is the body of GET /api/v1/verdict (SPEC §6), and of the
// Flagger hooks.
type VerdictResponse struct {
	Verdict Verdict `json:"verdict"`
	Arm     string  `json:"arm"`
	Window  string  `json:"window"`
	// Reason says in words why the verdict is not pass.
	Reason string `json:"reason,omitempty"`
	// EvaluatedAt is the time of the evaluation the gates come from.
	EvaluatedAt time.Time `json:"evaluated_at,omitzero"`
	Gates       []Result  `json:"gates"`
}

// Report is the verdict of arm over win at now, with its gates. It is
// inconclusive when the engine has not been evaluated within StaleAfter of
// now, whatever the gates say.
func (e *Engine) Report(arm, win string, now time.Time) VerdictResponse {
	v, rs := e.Verdict(arm, win)
	if rs == nil {
		rs = []Result{}
	}
	resp := VerdictResponse{Verdict: v, Arm: arm, Window: win, EvaluatedAt: e.Evaluated(), Gates: rs}
	if stale, why := e.stale(now); stale {
		resp.Verdict, resp.Reason = VerdictInconclusive, why
		return resp
	}
	var failing, undecided []string
	for _, r := range rs {
		switch r.Verdict {
		case VerdictFail:
			failing = append(failing, r.Gate+" ("+r.State.String()+")")
		case VerdictInconclusive:
			undecided = append(undecided, r.Gate)
		}
	}
	switch {
	case len(rs) == 0:
		resp.Reason = fmt.Sprintf("no gate judges arm %s over window %s", arm, win)
	case v == VerdictFail:
		resp.Reason = "failing: " + strings.Join(failing, ", ")
	case v == VerdictInconclusive:
		resp.Reason = "inconclusive: " + strings.Join(undecided, ", ")
	}
	return resp
}

// armWindow applies the defaults of the verdict endpoints.
func (e *Engine) armWindow(arm, win string) (string, string) {
	if arm == "" {
		arm = DefaultVerdictArm
	}
	if win == "" {
		win = e.DefaultWindow()
	}
	return arm, win
}

// VerdictHandler serves GET /api/v1/verdict?arm=canary&window=5m: always
// 200 with a VerdictResponse, for Argo Rollouts' web metric
// (successCondition: result.verdict == "pass"). arm defaults to
// DefaultVerdictArm, window to the engine's DefaultWindow. now is the clock
// (nil: time.Now).
func VerdictHandler(e *Engine, now func() time.Time) http.Handler {
	now = clock(now)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		arm, win := e.armWindow(q.Get("arm"), q.Get("window"))
		writeJSON(w, http.StatusOK, e.Report(arm, win, now()))
	})
}

// FlaggerPayload is the body of a Flagger webhook (CanaryWebhookPayload).
type FlaggerPayload struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Phase     string            `json:"phase"`
	Checksum  string            `json:"checksum"`
	Metadata  map[string]string `json:"metadata"`
}

// FlaggerResponse is the body of a Flagger hook's answer.
type FlaggerResponse struct {
	Hook string `json:"hook"`
	VerdictResponse
}

// Flagger hooks and the verdict that answers 200 for each; other verdicts
// answer 412.
var flaggerHooks = map[string]Verdict{
	"confirm-rollout":          VerdictPass, // start only an eligible (e.g. shadow) arm
	"pre-rollout":              VerdictPass,
	"rollout":                  VerdictPass,
	"confirm-traffic-increase": VerdictPass,
	"confirm-promotion":        VerdictPass,
	"rollback":                 VerdictFail, // 200 = roll back now
}

// FlaggerHandler serves POST /api/v1/flagger/{hook}. The hooks
// confirm-rollout, pre-rollout, rollout, confirm-traffic-increase and
// confirm-promotion answer 200 when the verdict is pass and 412 otherwise
// (inconclusive included); rollback answers 200 when the verdict is fail
// and 412 otherwise. Another hook is 404, a body that is not a Flagger
// payload 400 (an empty body is an empty payload). The arm is the
// payload's metadata.arm (default DefaultVerdictArm), the window its
// metadata.window (default the engine's DefaultWindow). The hook is the
// {hook} path value, or the last path segment when mounted without one.
// now is the clock (nil: time.Now).
func FlaggerHandler(e *Engine, now func() time.Time) http.Handler {
	now = clock(now)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hook := r.PathValue("hook")
		if hook == "" {
			hook = path.Base(r.URL.Path)
		}
		pass, ok := flaggerHooks[hook]
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("unknown Flagger hook %q (want one of confirm-rollout, pre-rollout, rollout, confirm-traffic-increase, confirm-promotion, rollback)", hook)})
			return
		}
		var p FlaggerPayload
		if err := readJSON(w, r, maxFlaggerBody, &p); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad Flagger webhook payload: " + err.Error()})
			return
		}
		arm, win := e.armWindow(p.Metadata["arm"], p.Metadata["window"])
		resp := FlaggerResponse{Hook: hook, VerdictResponse: e.Report(arm, win, now())}
		status := http.StatusPreconditionFailed
		if resp.Verdict == pass {
			status = http.StatusOK
		}
		writeJSON(w, status, resp)
	})
}

// KayentaRequest is the part of Kayenta's RemoteJudgeRequest
// ({canaryConfig, scoreThresholds, metricSetPairList}) the judge reads;
// the metric data itself is ignored.
type KayentaRequest struct {
	CanaryConfig *struct {
		Name  string `json:"name"`
		Judge *struct {
			Name                string         `json:"name"`
			JudgeConfigurations map[string]any `json:"judgeConfigurations"`
		} `json:"judge"`
	} `json:"canaryConfig"`
	ScoreThresholds *struct {
		Pass     *float64 `json:"pass"`
		Marginal *float64 `json:"marginal"`
	} `json:"scoreThresholds"`
	MetricSetPairList []struct {
		Name string            `json:"name"`
		ID   string            `json:"id"`
		Tags map[string]string `json:"tags"`
	} `json:"metricSetPairList"`
}

// KayentaJudgeResult is Kayenta's CanaryJudgeResult.
type KayentaJudgeResult struct {
	JudgeName   string                  `json:"judgeName"`
	Results     []KayentaAnalysisResult `json:"results"`
	GroupScores []KayentaGroupScore     `json:"groupScores"`
	Score       KayentaScore            `json:"score"`
}

// KayentaAnalysisResult is Kayenta's CanaryAnalysisResult: one gate.
type KayentaAnalysisResult struct {
	Name                 string            `json:"name"`
	ID                   string            `json:"id"`
	Tags                 map[string]string `json:"tags"`
	Classification       string            `json:"classification"`
	ClassificationReason string            `json:"classificationReason,omitempty"`
	Groups               []string          `json:"groups"`
	ExperimentMetadata   map[string]any    `json:"experimentMetadata"`
	ControlMetadata      map[string]any    `json:"controlMetadata"`
	ResultMetadata       map[string]any    `json:"resultMetadata"`
	Critical             bool              `json:"critical"`
	Muted                bool              `json:"muted"`
}

// KayentaGroupScore is Kayenta's CanaryJudgeGroupScore.
type KayentaGroupScore struct {
	Name                 string  `json:"name"`
	Score                float64 `json:"score"`
	Classification       string  `json:"classification"`
	ClassificationReason string  `json:"classificationReason,omitempty"`
}

// KayentaScore is Kayenta's CanaryJudgeScore.
type KayentaScore struct {
	Score                float64 `json:"score"`
	Classification       string  `json:"classification"`
	ClassificationReason string  `json:"classificationReason"`
}

// KayentaJudgeName is the judgeName of the results.
const KayentaJudgeName = "shadoweval"

// kayentaGroup is the one group every gate belongs to.
const kayentaGroup = "shadoweval"

// KayentaJudgeHandler serves POST /judge, a Kayenta remote judge
// (kayenta.remote-judge.endpoint): it reads the RemoteJudgeRequest,
// ignores Kayenta's metric data and answers a CanaryJudgeResult from the
// shadoweval gates of one arm and window. The arm is the query's arm, else
// canaryConfig.judge.judgeConfigurations.arm, else the first metric set
// pair's tags.arm, else DefaultVerdictArm; the window likewise (query
// window, judgeConfigurations.window, tags.window, the engine's
// DefaultWindow).
//
// Mapping: each gate is a result classified Pass (pass), High or Low
// (fail: the value is above a `<`/`<=` threshold or below a `>`/`>=` one)
// or Nodata (inconclusive). The score is 100 Pass when the verdict is
// pass, 0 Fail when it is fail; inconclusive scores the request's marginal
// threshold (50 without one; kept below its pass threshold), classified
// Nodata: Kayenta neither aborts the canary on it (the score is not below
// marginal) nor lets it pass (it is below pass). One group, "shadoweval",
// carries the same score. 400 for a body that is not JSON of that shape;
// otherwise 200.
func KayentaJudgeHandler(e *Engine, now func() time.Time) http.Handler {
	now = clock(now)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req KayentaRequest
		if err := readJSON(w, r, maxKayentaBody, &req); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad Kayenta remote judge request: " + err.Error()})
			return
		}
		q := r.URL.Query()
		arm, win := e.armWindow(req.pick(q.Get("arm"), "arm"), req.pick(q.Get("window"), "window"))
		writeJSON(w, http.StatusOK, e.kayentaResult(arm, win, now(), req.thresholds()))
	})
}

// pick returns the first non-empty of given, judgeConfigurations[key] and
// the first metric set pair tag key.
func (req *KayentaRequest) pick(given, key string) string {
	if given != "" {
		return given
	}
	if c := req.CanaryConfig; c != nil && c.Judge != nil {
		if s, ok := c.Judge.JudgeConfigurations[key].(string); ok && s != "" {
			return s
		}
	}
	for _, m := range req.MetricSetPairList {
		if s := m.Tags[key]; s != "" {
			return s
		}
	}
	return ""
}

// scoreThresholds are Kayenta's pass and marginal scores.
type scoreThresholds struct {
	pass, marginal float64 // pass +Inf, marginal 50 when not given
}

func (req *KayentaRequest) thresholds() scoreThresholds {
	th := scoreThresholds{pass: math.Inf(1), marginal: 50}
	if t := req.ScoreThresholds; t != nil {
		if t.Pass != nil {
			th.pass = *t.Pass
		}
		if t.Marginal != nil {
			th.marginal = *t.Marginal
		}
	}
	return th
}

func (e *Engine) kayentaResult(arm, win string, now time.Time, th scoreThresholds) KayentaJudgeResult {
	rep := e.Report(arm, win, now)
	res := KayentaJudgeResult{JudgeName: KayentaJudgeName, Results: make([]KayentaAnalysisResult, 0, len(rep.Gates))}
	for _, g := range rep.Gates {
		class := "Nodata"
		switch g.Verdict {
		case VerdictPass:
			class = "Pass"
		case VerdictFail:
			class = "Low"
			if g.Op == "<" || g.Op == "<=" {
				class = "High"
			}
		}
		exp := map[string]any{"arm": g.Arm, "samples": g.Samples}
		if g.Value != nil {
			exp["value"] = *g.Value
		}
		ctl := map[string]any{}
		if g.CompareTo != "" {
			ctl["arm"] = g.CompareTo
		}
		meta := map[string]any{"state": g.State.String(), "op": g.Op, "threshold": g.Threshold, "window": g.Window}
		if g.Interval != nil {
			meta["interval"] = []float64{g.Interval[0], g.Interval[1]}
		}
		if !g.ActiveAt.IsZero() {
			meta["activeAt"] = g.ActiveAt
		}
		res.Results = append(res.Results, KayentaAnalysisResult{
			Name: g.Gate, ID: g.Gate + "/" + g.Arm,
			Tags:           map[string]string{"arm": g.Arm, "window": g.Window, "metric": g.Metric, "severity": g.Severity},
			Classification: class, ClassificationReason: g.Reason,
			Groups:             []string{kayentaGroup},
			ExperimentMetadata: exp, ControlMetadata: ctl, ResultMetadata: meta,
		})
	}
	var score float64
	var class string
	reason := fmt.Sprintf("shadoweval verdict %s for arm %s over window %s", rep.Verdict, arm, win)
	if rep.Reason != "" {
		reason += ": " + rep.Reason
	}
	switch rep.Verdict {
	case VerdictPass:
		score, class = 100, "Pass"
	case VerdictFail:
		score, class = 0, "Fail"
	default:
		score, class = th.marginal, "Nodata"
		if score >= th.pass {
			score = th.pass - 1
		}
		score = min(max(score, 0), 100)
	}
	res.GroupScores = []KayentaGroupScore{{Name: kayentaGroup, Score: score, Classification: class, ClassificationReason: reason}}
	res.Score = KayentaScore{Score: score, Classification: class, ClassificationReason: reason}
	return res
}

func clock(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// readJSON decodes the body of r (at most limit bytes) into v; an empty
// body leaves v as it is.
func readJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fmt.Errorf("body larger than %d bytes", limit)
		}
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // ops such as ">=" stay readable
	_ = enc.Encode(v)
}
