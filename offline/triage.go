package offline

import (
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/shadoweval/shadoweval/internal/pycompat"
	"github.com/shadoweval/shadoweval/sidecar/checks"
)

// chunkText is the winning entry of a chunk id in chunks.json.
type chunkText struct {
	index int            // position in the array, for errors
	text  jsontext.Value // raw: the reference only needs a string when a trace uses it
}

// decodeChunks decodes chunks.json: a JSON array of {"id", "text"}
// objects, both keys required; later duplicates win. An id that is a
// number, boolean or null is kept by the reference as a dict key that no
// (string) trace id can ever equal, so it is ignored here; an array or
// object id would crash it (unhashable).
func decodeChunks(data []byte) (map[string]chunkText, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("invalid UTF-8")
	}
	var items []jsontext.Value
	if err := json.Unmarshal(data, &items); err != nil {
		var se *json.SemanticError
		if errors.As(err, &se) {
			if k := jsontext.Value(data).Kind(); k != '[' {
				return nil, errWant("a JSON array of {\"id\", \"text\"} objects", k)
			}
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if k := jsontext.Value(data).Kind(); k != '[' {
		return nil, errWant("a JSON array of {\"id\", \"text\"} objects", k)
	}
	if err := checkPythonLimits(data, maxDepthChunks); err != nil {
		return nil, err
	}
	m := make(map[string]chunkText, len(items))
	for i, it := range items {
		if k := it.Kind(); k != '{' {
			return nil, fmt.Errorf("item %d: %w", i, errWant("an object", k))
		}
		var c struct {
			ID   jsontext.Value `json:"id"`
			Text jsontext.Value `json:"text"`
		}
		if err := json.Unmarshal(it, &c); err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		if len(c.ID) == 0 {
			return nil, fmt.Errorf("item %d: %w", i, &fieldError{"id", errMissing})
		}
		if len(c.Text) == 0 {
			return nil, fmt.Errorf("item %d: %w", i, &fieldError{"text", errMissing})
		}
		switch k := c.ID.Kind(); k {
		case '"':
			id, err := stringField(c.ID, false)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, &fieldError{"id", err})
			}
			m[id] = chunkText{index: i, text: c.Text}
		case '[', '{':
			return nil, fmt.Errorf("item %d: %w", i, &fieldError{"id", errWant("a string", k)})
		}
	}
	return m, nil
}

// traceRecord is the part of a trace line that seed 004 reads.
type traceRecord struct {
	Q       string
	Answer  string
	ChunkID []string
	// wireOnly: the line carries the sidecar's retrieved_ids or
	// answer_json where seed 004 reads chunks and answer.
	wireOnly bool
}

// seed004Format is the trace line triage reads, for its messages.
const seed004Format = `{"q", "chunks": [{"id"}, …], "answer"} (seed 004); the sidecar's events are judged by shadoweval eval`

// decodeTraceLine decodes one non-blank trace line (unstripped: json.loads
// only allows JSON white space around the object). q is a required string,
// answer an optional string, chunks an optional array of objects whose
// "id", when present, is a string.
func decodeTraceLine(line []byte) (traceRecord, error) {
	var raw struct {
		Q      jsontext.Value `json:"q"`
		Answer jsontext.Value `json:"answer"`
		Chunks jsontext.Value `json:"chunks"`
		// Read only to say they are not: the sidecar's wire format.
		RetrievedIDs jsontext.Value `json:"retrieved_ids"`
		AnswerJSON   jsontext.Value `json:"answer_json"`
	}
	if err := decodeObjectLine(line, maxDepthTrace, &raw); err != nil {
		return traceRecord{}, err
	}
	var rec traceRecord
	rec.wireOnly = (len(raw.RetrievedIDs) > 0 && len(raw.Chunks) == 0) || (len(raw.AnswerJSON) > 0 && len(raw.Answer) == 0)
	var err error
	if rec.Q, err = stringField(raw.Q, false); err != nil {
		if rec.wireOnly {
			return traceRecord{}, fmt.Errorf("%w: a trace line is %s", &fieldError{"q", err}, seed004Format)
		}
		return traceRecord{}, &fieldError{"q", err}
	}
	if rec.Answer, err = stringField(raw.Answer, true); err != nil {
		return traceRecord{}, &fieldError{"answer", err}
	}
	rec.ChunkID = []string{}
	if len(raw.Chunks) == 0 {
		return rec, nil
	}
	if k := raw.Chunks.Kind(); k != '[' {
		return traceRecord{}, &fieldError{"chunks", errWant("an array of objects", k)}
	}
	var items []jsontext.Value
	if err := json.Unmarshal(raw.Chunks, &items); err != nil {
		return traceRecord{}, &fieldError{"chunks", err}
	}
	for i, it := range items {
		field := fmt.Sprintf("chunks[%d]", i)
		if k := it.Kind(); k != '{' {
			return traceRecord{}, &fieldError{field, errWant("an object", k)}
		}
		var c struct {
			ID jsontext.Value `json:"id"`
		}
		if err := json.Unmarshal(it, &c); err != nil {
			return traceRecord{}, &fieldError{field, err}
		}
		if len(c.ID) == 0 {
			continue // [c["id"] for c in chunks if "id" in c]
		}
		id, err := stringField(c.ID, false)
		if err != nil {
			return traceRecord{}, &fieldError{field + ".id", err}
		}
		rec.ChunkID = append(rec.ChunkID, id)
	}
	return rec, nil
}

// RunTriage is `shadoweval triage TRACE CHUNKS`: seed 004's reflect.py. It
// prints one JSON line per non-blank trace line, keys q, label, why, chunks,
// citations_in_answer, as json.dumps(ensure_ascii=False) does. Nothing is
// printed when any input is bad: the error names the file, line and field.
// Lines that carry the sidecar's retrieved_ids or answer_json instead of
// chunks and answer are labelled as reflect.py labels them (without
// chunks), and stderr says so, with the first such line and their count.
func RunTriage(stdout, stderr io.Writer, tracePath, chunksPath string) error {
	data, err := os.ReadFile(chunksPath)
	if err != nil {
		return err
	}
	chunks, err := decodeChunks(data)
	if err != nil {
		return fmt.Errorf("%s: %w", chunksPath, err)
	}
	var out []byte
	wireLines, firstWire := 0, 0
	err = readJSONL(tracePath, false, func(lineNo int, line []byte) error {
		rec, err := decodeTraceLine(line)
		if err != nil {
			return err
		}
		if rec.wireOnly {
			if wireLines++; firstWire == 0 {
				firstWire = lineNo
			}
		}
		texts := make([]string, len(rec.ChunkID))
		for i, id := range rec.ChunkID {
			c, ok := chunks[id]
			if !ok {
				continue
			}
			if texts[i], err = stringField(c.text, false); err != nil {
				return fmt.Errorf("chunk %q (%s item %d): %w", id, chunksPath, c.index, &fieldError{"text", err})
			}
		}
		res := checks.Triage(rec.Q, rec.Answer, rec.ChunkID, texts)
		out = append(out, pycompat.Dumps(pycompat.Object{
			{Key: "q", Value: rec.Q},
			{Key: "label", Value: res.Label},
			{Key: "why", Value: res.Why},
			{Key: "chunks", Value: rec.ChunkID},
			{Key: "citations_in_answer", Value: res.Citations},
		}, pycompat.DumpOptions{})...)
		out = append(out, '\n')
		return nil
	})
	if err != nil {
		return err
	}
	if wireLines > 0 {
		fmt.Fprintf(stderr, "shadoweval triage: %s:%d and %d more lines have retrieved_ids or answer_json but no chunks or answer, which triage does not read: a trace line is %s\n",
			tracePath, firstWire, wireLines-1, seed004Format)
	}
	_, err = stdout.Write(out)
	return err
}
