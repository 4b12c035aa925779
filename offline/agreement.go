package offline

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/shadoweval/shadoweval/internal/pycompat"
	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/vocab"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// Defaults of the seed 003 reference scorer (cross_agent_consistency.py).
const (
	DefaultPAGate      = 0.90
	DefaultKappaGate   = 0.75
	DefaultAbstainGate = 0.02
	DefaultTSVPath     = "runs/consistency_disagreements.tsv"
)

// AgreementOptions are the arguments of `shadoweval agreement`. Pairs (the
// merged file) wins over Scholar and Auditor (two files joined by qid), as
// in the reference; an empty string means "not given".
type AgreementOptions struct {
	Pairs, Scholar, Auditor string
	TSVPath                 string // disagreements TSV; empty means DefaultTSVPath
	PAGate                  float64
	KappaGate               float64
	AbstainGate             float64
}

// Python's json.loads refuses some documents that are valid JSON: nesting
// deeper than the interpreter's recursion limit allows (RecursionError; the
// room left depends on the call depth of json.loads in each script, measured
// with CPython 3.11) and integer literals longer than sys.int_info
// .default_max_str_digits (ValueError).
const (
	maxDepthPairs     = 992 // cross_agent_consistency.py --pairs
	maxDepthJudgement = 991 // cross_agent_consistency.py --scholar/--auditor
	maxDepthTrace     = 995 // reflect.py, a trace line
	maxDepthChunks    = 993 // reflect.py, chunks.json
	maxIntDigits      = 4300
)

// agreementRow is one pair: from a pairs line (raw fields kept for the
// arbitration of disagreeing pairs), or joined from the scholar and auditor
// files (joined: the qid is known and there are no flags, answer or ids).
type agreementRow struct {
	where            string // "file:line" for errors
	scholar, auditor string
	qid              jsontext.Value // pairs mode: raw, read only when needed, as the reference does
	joinedQID        string         // two-file mode
	joined           bool
	flags            jsontext.Value
	answerJSON       jsontext.Value
	retrievedIDs     jsontext.Value
}

// RunAgreement is `shadoweval agreement`: the seed 003 reference scorer. It
// prints the report (json.dumps indent=2) to stdout and, when some pairs
// disagree, writes the disagreements TSV to opt.TSVPath, creating its
// directory, atomically; with no disagreement an existing TSV is left alone,
// as the reference does. pass is the gate result. Bad input (what would make
// the reference crash, plus the shapes SPEC forbids) gives an error naming
// the file, line and field, and nothing is written.
func RunAgreement(stdout io.Writer, opt AgreementOptions) (pass bool, err error) {
	var rows []agreementRow
	switch {
	case opt.Pairs != "":
		rows, err = loadPairs(opt.Pairs)
	case opt.Scholar != "" && opt.Auditor != "":
		rows, err = joinJudgements(opt.Scholar, opt.Auditor)
	default:
		err = errors.New("agreement: give a pairs file, or both a scholar and an auditor file")
	}
	if err != nil {
		return false, err
	}

	st := confusionAndKappa(rows)

	var tsv []byte
	nDis := 0
	for i := range rows {
		r := &rows[i]
		if r.scholar == r.auditor {
			continue
		}
		final, why, err := r.arbitrate()
		if err != nil {
			return false, err
		}
		q, err := r.qidString()
		if err != nil {
			return false, err
		}
		if nDis == 0 {
			tsv = append(tsv, "qid\tscholar\tauditor\tfinal\twhy\n"...)
		}
		nDis++
		for j, f := range [...]string{q, r.scholar, r.auditor, final, why} {
			if j > 0 {
				tsv = append(tsv, '\t')
			}
			tsv = append(tsv, f...)
		}
		tsv = append(tsv, '\n')
	}
	if nDis > 0 {
		path := opt.TSVPath
		if path == "" {
			path = DefaultTSVPath
		}
		if err := writeFileAtomic(path, tsv); err != nil {
			return false, fmt.Errorf("agreement: disagreements TSV: %w", err)
		}
	}

	pass = st.PercentAgreement >= opt.PAGate && st.Kappa >= opt.KappaGate && st.AbstainRate <= opt.AbstainGate
	report := pycompat.Object{
		{Key: "n", Value: st.N},
		{Key: "percent_agreement", Value: pycompat.Round(st.PercentAgreement, 4)},
		{Key: "kappa", Value: pycompat.Round(st.Kappa, 4)},
		{Key: "abstain_rate", Value: pycompat.Round(st.AbstainRate, 4)},
		{Key: "disagreements", Value: nDis},
		{Key: "gates", Value: pycompat.Object{
			{Key: "pa", Value: opt.PAGate},
			{Key: "kappa", Value: opt.KappaGate},
			{Key: "abstain", Value: opt.AbstainGate},
		}},
		{Key: "pass", Value: pass},
	}
	out := pycompat.Dumps(report, pycompat.DumpOptions{Indent: 2})
	if _, err := stdout.Write(append(out, '\n')); err != nil {
		return false, err
	}
	return pass, nil
}

// confusionAndKappa is confusion_and_kappa of the reference: the confusion
// matrix of the rows whose two labels are both in the label space, and its
// statistics by window.Agreement, whose float operations are the
// reference's, in its order, so that the results are the same doubles.
func confusionAndKappa(rows []agreementRow) window.AgreementStats {
	var m [vocab.NumLabels][vocab.NumLabels]int64
	for _, r := range rows {
		i, ok1 := vocab.LabelIndex(r.scholar)
		j, ok2 := vocab.LabelIndex(r.auditor)
		if ok1 && ok2 {
			m[i][j]++
		}
	}
	return window.Agreement(m)
}

// qidString is r["qid"] where the reference needs it as a string: in the
// disagreements TSV.
func (r *agreementRow) qidString() (string, error) {
	if r.joined {
		return r.joinedQID, nil
	}
	s, err := stringField(r.qid, false)
	if err != nil {
		return "", fmt.Errorf("%s: field %q: %w", r.where, "qid", err)
	}
	return s, nil
}

// arbitrate decodes the fields final_arbitration reads, in its order and
// only as far as it reads them, and applies checks.Arbitrate.
func (r *agreementRow) arbitrate() (final, why string, err error) {
	in := checks.ArbitrationInput{Scholar: r.scholar, Auditor: r.auditor}
	fail := func(field string, err error) (string, string, error) {
		return "", "", fmt.Errorf("%s: field %q: %w", r.where, field, err)
	}
	// flags = r.get("flags", {}); flags.get(...): an object when present.
	if len(r.flags) > 0 {
		if k := r.flags.Kind(); k != '{' {
			return fail("flags", errWant("an object", k))
		}
		if err := json.Unmarshal(r.flags, &in.Flags); err != nil {
			return fail("flags", err)
		}
	}
	if checks.HardFlag(in.Flags) {
		return vocab.LabelReject, checks.WhyHardFlag, nil
	}
	// aj = r.get("answer_json") or {}; cits = set(aj.get("citations") or [])
	if len(r.answerJSON) > 0 && r.answerJSON.Kind() != 'n' {
		if k := r.answerJSON.Kind(); k != '{' {
			return fail("answer_json", errWant("an object or null", k))
		}
		var aj struct {
			Citations jsontext.Value `json:"citations"`
		}
		if err := json.Unmarshal(r.answerJSON, &aj); err != nil {
			return fail("answer_json", err)
		}
		if in.Citations, err = stringList(aj.Citations); err != nil {
			return fail("answer_json.citations", err)
		}
	}
	// retrieved = set(r.get("retrieved_ids") or [])
	if in.RetrievedIDs, err = stringList(r.retrievedIDs); err != nil {
		return fail("retrieved_ids", err)
	}
	final, why = checks.Arbitrate(in)
	return final, why, nil
}

// pairLine is the part of a pairs line the reference reads.
type pairLine struct {
	QID          jsontext.Value `json:"qid"`
	Scholar      jsontext.Value `json:"scholar"`
	Auditor      jsontext.Value `json:"auditor"`
	Flags        jsontext.Value `json:"flags"`
	AnswerJSON   jsontext.Value `json:"answer_json"`
	RetrievedIDs jsontext.Value `json:"retrieved_ids"`
}

// decodePairLine decodes one non-blank, stripped line of a pairs file.
// Labels are checked on every line (the confusion matrix reads them all);
// qid, flags, answer_json and retrieved_ids only when the pair disagrees.
func decodePairLine(line []byte) (agreementRow, error) {
	var p pairLine
	if err := decodeObjectLine(line, maxDepthPairs, &p); err != nil {
		return agreementRow{}, err
	}
	r := agreementRow{qid: p.QID, flags: p.Flags, answerJSON: p.AnswerJSON, retrievedIDs: p.RetrievedIDs}
	var err error
	if r.scholar, err = agentLabel(p.Scholar, "scholar"); err != nil {
		return agreementRow{}, err
	}
	if r.auditor, err = agentLabel(p.Auditor, "auditor"); err != nil {
		return agreementRow{}, err
	}
	return r, nil
}

// agentLabel is r[agent]["label"]: agent must be an object with a string
// label.
func agentLabel(v jsontext.Value, agent string) (string, error) {
	if len(v) == 0 {
		return "", &fieldError{agent, errMissing}
	}
	if k := v.Kind(); k != '{' {
		return "", &fieldError{agent, errWant("an object", k)}
	}
	var a struct {
		Label jsontext.Value `json:"label"`
	}
	if err := json.Unmarshal(v, &a); err != nil {
		return "", &fieldError{agent, err}
	}
	s, err := stringField(a.Label, false)
	if err != nil {
		return "", &fieldError{agent + ".label", err}
	}
	return s, nil
}

func loadPairs(path string) ([]agreementRow, error) {
	var rows []agreementRow
	err := readJSONL(path, true, func(lineNo int, line []byte) error {
		r, err := decodePairLine(line)
		if err != nil {
			return err
		}
		r.where = fmt.Sprintf("%s:%d", path, lineNo)
		rows = append(rows, r)
		return nil
	})
	return rows, err
}

// judgementLine is a line of the scholar or auditor file.
type judgementLine struct {
	QID   jsontext.Value `json:"qid"`
	Label jsontext.Value `json:"label"`
}

type judgement struct {
	where string
	label jsontext.Value // read only when the qid is in both files
}

// decodeJudgementLine decodes one non-blank, stripped line of a scholar or
// auditor file: an object with a string qid (the reference makes it a dict
// key; SPEC makes it a string). The label is returned raw.
func decodeJudgementLine(line []byte) (qid string, label jsontext.Value, err error) {
	var j judgementLine
	if err := decodeObjectLine(line, maxDepthJudgement, &j); err != nil {
		return "", nil, err
	}
	if qid, err = stringField(j.QID, false); err != nil {
		return "", nil, &fieldError{"qid", err}
	}
	return qid, j.Label, nil
}

func loadJudgements(path string) (map[string]judgement, error) {
	m := map[string]judgement{}
	err := readJSONL(path, true, func(lineNo int, line []byte) error {
		qid, label, err := decodeJudgementLine(line)
		if err != nil {
			return err
		}
		m[qid] = judgement{where: fmt.Sprintf("%s:%d", path, lineNo), label: label}
		return nil
	})
	return m, err
}

// joinJudgements is the two-file mode of join_pairs: the last line of each
// qid wins, and the qids present in both files are taken in sorted order
// (Go's byte order on UTF-8 is Python's code point order).
func joinJudgements(scholarPath, auditorPath string) ([]agreementRow, error) {
	s, err := loadJudgements(scholarPath)
	if err != nil {
		return nil, err
	}
	a, err := loadJudgements(auditorPath)
	if err != nil {
		return nil, err
	}
	var qids []string
	for q := range s {
		if _, ok := a[q]; ok {
			qids = append(qids, q)
		}
	}
	sort.Strings(qids)
	rows := make([]agreementRow, 0, len(qids))
	for _, q := range qids {
		sj, aj := s[q], a[q]
		sl, err := stringField(sj.label, false)
		if err != nil {
			return nil, fmt.Errorf("%s: field %q: %w", sj.where, "label", err)
		}
		al, err := stringField(aj.label, false)
		if err != nil {
			return nil, fmt.Errorf("%s: field %q: %w", aj.where, "label", err)
		}
		rows = append(rows, agreementRow{where: sj.where, scholar: sl, auditor: al, joinedQID: q, joined: true})
	}
	return rows, nil
}

// ---- helpers shared with triage.go ----

var errMissing = errors.New("missing")

type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return fmt.Sprintf("field %q: %v", e.field, e.err) }
func (e *fieldError) Unwrap() error { return e.err }

func errWant(want string, got jsontext.Kind) error {
	return fmt.Errorf("want %s, got %s", want, wire.KindName(got))
}

// stringField decodes a JSON string; absent is an error unless
// absentOK, in which case it yields "".
func stringField(v jsontext.Value, absentOK bool) (string, error) {
	if len(v) == 0 {
		if absentOK {
			return "", nil
		}
		return "", errMissing
	}
	if k := v.Kind(); k != '"' {
		return "", errWant("a string", k)
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", err
	}
	return s, nil
}

// stringList decodes `x or []` for a list of ids: absent and null give nil,
// an array of strings is returned, anything else is an error.
func stringList(v jsontext.Value) ([]string, error) {
	if len(v) == 0 || v.Kind() == 'n' {
		return nil, nil
	}
	if k := v.Kind(); k != '[' {
		return nil, errWant("an array of strings or null", k)
	}
	var items []jsontext.Value
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, err
	}
	out := make([]string, len(items))
	for i, it := range items {
		if k := it.Kind(); k != '"' {
			return nil, fmt.Errorf("item %d: %w", i, errWant("a string", k))
		}
		if err := json.Unmarshal(it, &out[i]); err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
	}
	return out, nil
}

// decodeObjectLine parses one JSON document that must be an object into
// dst. It refuses what json.loads would refuse (invalid JSON, NaN and
// Infinity, too deep, too long integers) and, beyond it, duplicate member
// names and lone surrogate escapes.
func decodeObjectLine(line []byte, maxDepth int, dst any) error {
	if err := json.Unmarshal(line, dst); err != nil {
		var se *json.SemanticError
		if errors.As(err, &se) {
			// The only semantic error left is a top level that is not an
			// object: every field is a jsontext.Value.
			if k := jsontext.Value(line).Kind(); k != '{' {
				return errWant("a JSON object", k)
			}
		}
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if k := jsontext.Value(line).Kind(); k != '{' {
		return errWant("a JSON object", k) // null unmarshals into a struct without error
	}
	return checkPythonLimits(line, maxDepth)
}

// checkPythonLimits scans a valid JSON document for what Python's json
// module refuses although it is valid JSON: nesting deeper than maxDepth
// and integers (no fraction, no exponent) of more than 4300 digits.
func checkPythonLimits(b []byte, maxDepth int) error {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case c == '[' || c == '{':
			depth++
			if depth > maxDepth {
				return fmt.Errorf("nested deeper than %d levels (Python's json raises RecursionError)", maxDepth)
			}
		case c == ']' || c == '}':
			depth--
		case c == '-' || '0' <= c && c <= '9':
			j := i
			if c == '-' {
				j++
			}
			start := j
			for j < len(b) && '0' <= b[j] && b[j] <= '9' {
				j++
			}
			digits := j - start
			isFloat := j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E')
			for j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-' || '0' <= b[j] && b[j] <= '9') {
				j++
			}
			if !isFloat && digits > maxIntDigits {
				return fmt.Errorf("integer with %d digits (Python's json refuses more than %d)", digits, maxIntDigits)
			}
			i = j - 1
		}
	}
	return nil
}

// readJSONL reads a file as Python iterates over it in text mode
// (encoding="utf8": invalid UTF-8 anywhere is an error; universal newlines)
// and calls f with each line that is not blank by Python's str.strip().
// With strip, f gets the stripped line (the seed 003 scorer parses
// line.strip()); otherwise the line as is (seed 004 parses the raw line).
// Errors from f are prefixed with path:line.
func readJSONL(path string, strip bool, f func(lineNo int, line []byte) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var ferr error
	pycompat.SplitLines(data, func(lineNo int, line []byte) bool {
		if !utf8.Valid(line) {
			ferr = fmt.Errorf("%s:%d: invalid UTF-8", path, lineNo)
			return false
		}
		stripped := pycompat.Strip(string(line))
		if stripped == "" {
			return true
		}
		if strip {
			line = []byte(stripped)
		}
		if err := f(lineNo, line); err != nil {
			ferr = fmt.Errorf("%s:%d: %w", path, lineNo, err)
			return false
		}
		return true
	})
	return ferr
}

// writeFileAtomic replaces path with data through a temporary file in the
// same directory, creating the directory if needed. An existing file keeps
// its permission bits (a symbolic link is followed); a new one gets 0644.
func writeFileAtomic(path string, data []byte) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	ok = true
	return nil
}
