package analysis

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/internal/httpjson"
)

// Body limits of the POST handlers.
const (
	maxRequestBody = 1 << 20
	maxKayentaBody = 64 << 20 // Kayenta sends every metric's time series
)

// Defaults of the verdict endpoints (SPEC §6).
const (
	DefaultArm            = "canary"
	DefaultEligibilityArm = "shadow"
)

// Handlers serves the analyses API and the verdict endpoints from one
// Manager. Admin wraps the handlers that end analyses (nil: open).
type Handlers struct {
	M     *Manager
	Now   func() time.Time
	Admin func(w http.ResponseWriter, r *http.Request) bool
	// Result, when set, gives an analysis' result in place of its own
	// (a cluster's replicas answer with every member's events merged).
	Result func(*Analysis) Result
	// KnownArms, when set, lists the arms a verdict request may start an
	// analysis for (SPEC §6): any other answers 404 and starts nothing,
	// so that a typo never starts an analysis. nil: every arm.
	KnownArms func() []string
}

func (h *Handlers) result(an *Analysis) Result {
	if h.Result != nil {
		return h.Result(an)
	}
	return an.Result()
}

// Register mounts every endpoint on mux.
func (h *Handlers) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/verdict", h.verdict)
	mux.HandleFunc("POST /api/v1/analyses", h.start)
	mux.HandleFunc("GET /api/v1/analyses", h.list)
	mux.HandleFunc("GET /api/v1/analyses/{id}", h.get)
	mux.HandleFunc("DELETE /api/v1/analyses/{id}", h.end)
	mux.HandleFunc("POST /api/v1/flagger/{hook}", h.flagger)
	mux.HandleFunc("POST /judge", h.kayenta)
}

func (h *Handlers) now() time.Time {
	if h.Now == nil {
		return time.Now()
	}
	return h.Now()
}

// errorStatus maps a Start error to its HTTP status.
func errorStatus(err error) int {
	if errors.Is(err, ErrTooMany) {
		return http.StatusTooManyRequests
	}
	if errors.Is(err, ErrConflict) {
		return http.StatusConflict
	}
	return http.StatusBadRequest
}

// startOrGet starts the analysis of req unless its id runs already.
func (h *Handlers) startOrGet(req StartRequest) (*Analysis, bool, error) {
	return h.startOrGetAsked(req, req)
}

// startOrGetAsked is startOrGet where asked holds only the fields the
// caller named (the rest of req being defaults), which an existing
// analysis must match.
func (h *Handlers) startOrGetAsked(req, asked StartRequest) (*Analysis, bool, error) {
	id := req.ID
	if id == "" {
		id = req.Arm
		if id == "" {
			id = DefaultArm
		}
	}
	if an, ok := h.M.Get(id); ok {
		return an, false, conflicting(an.Spec(), asked)
	}
	_, created, err := h.M.Start(req, h.now())
	if err != nil {
		return nil, false, err
	}
	an, _ := h.M.Get(id)
	return an, created, conflicting(an.Spec(), asked)
}

// conflicting refuses a request that names an existing analysis but asks
// for another arm, baseline or check set than it judges: answering the
// existing one would read as a verdict on what was asked.
func conflicting(s Spec, req StartRequest) error {
	for _, f := range []struct{ name, asked, has string }{
		{"arm", req.Arm, s.Arm}, {"baseline", req.Baseline, s.Baseline}, {"checks", req.Checks, s.CheckSet},
	} {
		if f.asked != "" && f.asked != f.has {
			return fmt.Errorf("%w: analysis %q judges %s %q, not %q (arm %s, baseline %s, checks %s); end it first or use another id", ErrConflict, s.ID, f.name, f.has, f.asked, s.Arm, s.Baseline, s.CheckSet)
		}
	}
	return nil
}

// verdict serves GET /api/v1/verdict?arm=canary&analysis=ID[&baseline=live]
// for Argo Rollouts' web metric: 200 with the analysis' Result, starting
// the analysis when its id is unknown (without analysis, the id is the
// arm's name). Malformed names answer 400 and a full table 429, so that a
// broken template errors instead of reading as a verdict.
func (h *Handlers) verdict(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for name := range q {
		if !verdictParams[name] {
			// window=5m and the like: an analysis covers everything since
			// its start, and a misspelt name must not go unnoticed.
			writeError(w, http.StatusBadRequest, fmt.Errorf("%w: unknown parameter %q; the verdict takes analysis, arm, baseline and checks (an analysis covers everything both arms saw since it started, not a window)", ErrBadRequest, name))
			return
		}
	}
	req := StartRequest{ID: q.Get("analysis"), Arm: q.Get("arm"), Baseline: q.Get("baseline"), Checks: q.Get("checks")}
	if h.refusedArm(w, req) {
		return
	}
	an, _, err := h.startOrGet(req)
	if err != nil {
		writeError(w, errorStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, h.result(an))
}

// verdictParams are the query parameters of GET /api/v1/verdict.
var verdictParams = map[string]bool{"analysis": true, "arm": true, "baseline": true, "checks": true}

// refusedArm answers 404, naming the known arms, when req would start an
// analysis for an arm or baseline KnownArms does not list, and reports
// whether it did: a typo in a template or a webhook's metadata starts
// nothing that would wait for events that never come.
func (h *Handlers) refusedArm(w http.ResponseWriter, req StartRequest) bool {
	unknown, known := h.unknownArm(req)
	if unknown == "" {
		return false
	}
	writeJSON(w, http.StatusNotFound, map[string]any{
		"error":      fmt.Sprintf("unknown arm %q: no event named it and the configuration does not (known arms: %s); no analysis was started", unknown, strings.Join(known, ", ")),
		"known_arms": known,
	})
	return true
}

// unknownArm returns the arm of req, or its baseline, that KnownArms does
// not list when req would start an analysis, with the known arms; "" when
// the analysis runs already or both arms are known.
func (h *Handlers) unknownArm(req StartRequest) (string, []string) {
	if h.KnownArms == nil {
		return "", nil
	}
	if _, ok := h.M.Get(cmp.Or(req.ID, req.Arm, DefaultArm)); ok {
		return "", nil
	}
	known := h.KnownArms()
	for _, arm := range []string{cmp.Or(req.Arm, DefaultArm), cmp.Or(req.Baseline, DefaultBaseline)} {
		// A malformed name is Start's to refuse (400).
		if nameProblem("arm", arm, false) == "" && !slices.Contains(known, arm) {
			return arm, known
		}
	}
	return "", nil
}

func (h *Handlers) start(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	if err := readJSONStrict(w, r, maxRequestBody, &req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("%w: %v (the body takes id, arm, baseline and checks)", ErrBadRequest, err))
		return
	}
	if h.refusedArm(w, req) {
		return
	}
	an, created, err := h.startOrGet(req)
	if err != nil {
		writeError(w, errorStatus(err), err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, h.result(an))
}

func (h *Handlers) list(w http.ResponseWriter, _ *http.Request) {
	out := []Result{}
	for _, an := range h.M.List() {
		out = append(out, h.result(an))
	}
	writeJSON(w, http.StatusOK, map[string]any{"analyses": out})
}

// Detail is GET /api/v1/analyses/{id}: the result and how it narrowed.
type Detail struct {
	Result
	History []Point `json:"history"`
}

func (h *Handlers) get(w http.ResponseWriter, r *http.Request) {
	an, ok := h.M.Get(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("no analysis %q", r.PathValue("id")))
		return
	}
	hist := an.History()
	if hist == nil {
		hist = []Point{}
	}
	writeJSON(w, http.StatusOK, Detail{Result: h.result(an), History: hist})
}

// end serves DELETE /api/v1/analyses/{id}: ending an analysis changes a
// rollout decision, so it wants the admin token when one is set.
func (h *Handlers) end(w http.ResponseWriter, r *http.Request) {
	if h.Admin != nil && !h.Admin(w, r) {
		return
	}
	an, ok := h.M.End(r.PathValue("id"), h.now())
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("no analysis %q", r.PathValue("id")))
		return
	}
	writeJSON(w, http.StatusOK, h.result(an))
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
	Result
}

// flaggerRule says which check set a Flagger hook reads and which verdicts
// answer 200 (Flagger counts anything outside 200–202 as a failed check,
// except on its confirm-* gates, which only wait).
type flaggerRule struct {
	eligibility bool
	ok          func(Verdict) bool
}

func notFail(v Verdict) bool { return v != Fail }
func isPass(v Verdict) bool  { return v == Pass }

var flaggerHooks = map[string]flaggerRule{
	// confirm-rollout is a gate: Flagger waits on it without counting
	// failures, so it can hold the canary until eligibility passes.
	"confirm-rollout": {eligibility: true, ok: isPass},
	// pre-rollout failures count towards rollback: only a failed
	// eligibility is a failure, "not enough data yet" is not.
	"pre-rollout": {eligibility: true, ok: notFail},
	// rollout runs every interval; inconclusive keeps the canary advancing
	// while evidence accumulates.
	"rollout":                  {ok: notFail},
	"confirm-traffic-increase": {ok: notFail},
	"confirm-promotion":        {ok: isPass},
	// rollback: 200 means roll back now.
	"rollback": {ok: func(v Verdict) bool { return v == Fail }},
}

// flagger serves POST /api/v1/flagger/{hook}.
func (h *Handlers) flagger(w http.ResponseWriter, r *http.Request) {
	hook := r.PathValue("hook")
	if hook == "" {
		hook = path.Base(r.URL.Path)
	}
	rule, ok := flaggerHooks[hook]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("unknown Flagger hook %q (want one of confirm-rollout, pre-rollout, rollout, confirm-traffic-increase, confirm-promotion, rollback)", hook))
		return
	}
	var p FlaggerPayload
	if err := readJSON(w, r, maxRequestBody, &p); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("bad Flagger webhook payload: %v", err))
		return
	}
	for key := range p.Metadata {
		if !flaggerMetadata[key] {
			writeError(w, http.StatusBadRequest, fmt.Errorf("%w: unknown metadata key %q; the webhook reads analysis, arm and baseline", ErrBadRequest, key))
			return
		}
	}
	req := StartRequest{ID: p.Metadata["analysis"], Arm: p.Metadata["arm"], Baseline: p.Metadata["baseline"], Checks: config.CanaryCheckSet}
	asked := req
	if rule.eligibility {
		req.Checks, asked.Checks = config.EligibilityCheckSet, config.EligibilityCheckSet
		if req.Arm == "" {
			req.Arm = DefaultEligibilityArm
		}
	}
	if req.Arm == "" {
		req.Arm = DefaultArm
	}
	if req.ID == "" {
		req.ID = flaggerID(p, req)
	} else if rule.eligibility {
		req.ID += ".eligibility"
	}
	if h.refusedArm(w, req) {
		return
	}
	an, _, err := h.startOrGetAsked(req, asked)
	if err != nil {
		writeError(w, errorStatus(err), err)
		return
	}
	res := FlaggerResponse{Hook: hook, Result: h.result(an)}
	status := http.StatusPreconditionFailed
	if rule.ok(res.Verdict) {
		status = http.StatusOK
	}
	writeJSON(w, status, res)
}

// flaggerMetadata are the keys a webhook's metadata may hold.
var flaggerMetadata = map[string]bool{"analysis": true, "arm": true, "baseline": true}

// flaggerID is one analysis per canary (namespace, name), revision and
// check set: flagger:<namespace>:<name>:<checksum>[.eligibility]. Names
// outside the id alphabet are refused by Start with the reason.
func flaggerID(p FlaggerPayload, req StartRequest) string {
	ns := p.Namespace
	if ns == "" {
		ns = "default"
	}
	id := "flagger:" + ns + ":" + p.Name
	if p.Checksum != "" {
		id += ":" + p.Checksum
	}
	if p.Name == "" {
		id = "flagger:" + req.Arm
	}
	if req.Checks == config.EligibilityCheckSet {
		id += ".eligibility"
	}
	return id
}

// KayentaRequest is the part of Kayenta's RemoteJudgeRequest the judge
// reads; the metric data itself is ignored.
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

// KayentaAnalysisResult is Kayenta's CanaryAnalysisResult: one check.
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

// kayentaGroup is the one group every check belongs to.
const kayentaGroup = "shadoweval"

// pick returns the first non-empty of given, judgeConfigurations[key] and
// the first metric set pair's tag key.
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

// kayenta serves POST /judge, a Kayenta remote judge: it answers a
// CanaryJudgeResult from an analysis. The analysis id, arm and baseline are
// each the query's, else judgeConfigurations', else the first metric set
// pair's tag (keys analysis, arm, baseline); an unknown id starts it.
//
// Each check is a result classified Pass, High or Low (fail: above a
// lower-is-better tolerance or threshold, or below a higher-is-better one)
// or Nodata (inconclusive, no_data). The score is 100 Pass on pass, 0 Fail
// on fail; inconclusive scores halfway between the request's marginal and
// pass thresholds (75 and 95 without them), classified Nodata: Orca ends a
// canary whose score is not above marginal (MonitorKayentaCanaryTask) and
// fails a last interval below pass, so an inconclusive interval neither
// aborts nor promotes.
func (h *Handlers) kayenta(w http.ResponseWriter, r *http.Request) {
	var req KayentaRequest
	if err := readJSON(w, r, maxKayentaBody, &req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("bad Kayenta remote judge request: %v", err))
		return
	}
	q := r.URL.Query()
	sr := StartRequest{ID: req.pick(q.Get("analysis"), "analysis"), Arm: req.pick(q.Get("arm"), "arm"), Baseline: req.pick(q.Get("baseline"), "baseline")}
	if h.refusedArm(w, sr) {
		return
	}
	an, _, err := h.startOrGet(sr)
	if err != nil {
		writeError(w, errorStatus(err), err)
		return
	}
	writeJSON(w, http.StatusOK, kayentaResult(h.result(an), req.thresholds()))
}

// scoreThresholds are Kayenta's pass and marginal scores.
type scoreThresholds struct {
	pass, marginal float64
}

// Spinnaker's default thresholds, for a request that carries none.
const (
	defaultPassScore     = 95
	defaultMarginalScore = 75
)

func (req *KayentaRequest) thresholds() scoreThresholds {
	th := scoreThresholds{pass: defaultPassScore, marginal: defaultMarginalScore}
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

func kayentaResult(rep Result, th scoreThresholds) KayentaJudgeResult {
	res := KayentaJudgeResult{JudgeName: KayentaJudgeName, Results: make([]KayentaAnalysisResult, 0, len(rep.Checks))}
	for _, c := range rep.Checks {
		class := "Nodata"
		switch c.Verdict {
		case Pass:
			class = "Pass"
		case Fail:
			class = "Low"
			if c.LowerIsBetter {
				class = "High"
			}
		}
		exp := map[string]any{"arm": rep.Arm, "samples": c.Samples.Arm}
		if c.ArmValue != nil {
			exp["value"] = *c.ArmValue
		}
		ctl := map[string]any{"arm": rep.Baseline, "samples": c.Samples.Baseline}
		if c.BaselineValue != nil {
			ctl["value"] = *c.BaselineValue
		}
		meta := map[string]any{"kind": c.Kind, "tolerance": c.Tolerance, "level": c.Level, "pass_level": c.PassLevel}
		if c.Estimate != nil {
			meta["estimate"] = *c.Estimate
		}
		if c.Interval != nil {
			meta["interval"] = []float64{c.Interval[0], c.Interval[1]}
		}
		if c.Threshold != nil {
			meta["op"], meta["threshold"] = c.Op, *c.Threshold
		}
		res.Results = append(res.Results, KayentaAnalysisResult{
			Name: c.Name, ID: rep.Analysis + "/" + c.Name,
			Tags:           map[string]string{"analysis": rep.Analysis, "arm": rep.Arm, "baseline": rep.Baseline, "metric": c.Metric},
			Classification: class, ClassificationReason: c.Reason,
			Groups:             []string{kayentaGroup},
			ExperimentMetadata: exp, ControlMetadata: ctl, ResultMetadata: meta,
		})
	}
	var score float64
	var class string
	reason := fmt.Sprintf("shadoweval analysis %s: %s (arm %s, baseline %s)", rep.Analysis, rep.Verdict, rep.Arm, rep.Baseline)
	if rep.Reason != "" {
		reason += ": " + rep.Reason
	}
	switch rep.Verdict {
	case Pass:
		score, class = 100, "Pass"
	case Fail:
		score, class = 0, "Fail"
	default:
		class = "Nodata"
		lo, hi := min(max(th.marginal, 0), 100), min(max(th.pass, 0), 100)
		if hi > lo {
			score = (lo + hi) / 2
		} else {
			// No score is above marginal and below pass: one not above
			// marginal ends the canary, which is safer than promoting it.
			score = max(hi-1, 0)
		}
	}
	res.GroupScores = []KayentaGroupScore{{Name: kayentaGroup, Score: score, Classification: class, ClassificationReason: reason}}
	res.Score = KayentaScore{Score: score, Classification: class, ClassificationReason: reason}
	return res
}

// readJSON decodes the body of r (at most limit bytes) into v; an empty
// body leaves v as it is.
func readJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return decodeBody(w, r, limit, v, false)
}

// readJSONStrict is readJSON refusing keys v does not have: a misspelt
// one would otherwise start an analysis of the defaults.
func readJSONStrict(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	return decodeBody(w, r, limit, v, true)
}

func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any, strict bool) error {
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
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return err
	}
	if err := dec.Decode(new(json.RawMessage)); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": strings.TrimSpace(err.Error())})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Cache-Control", "no-store")
	httpjson.Write(w, status, v)
}
