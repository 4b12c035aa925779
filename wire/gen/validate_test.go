package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shadoweval/shadoweval/internal/pycompat"
)

// pyLines splits data like Python's text-mode file iteration (universal
// newlines) and yields the lines strip() leaves non-empty, stripped.
func pyLines(data []byte, yield func(lineNo int, line []byte) error) (err error) {
	pycompat.SplitLines(data, func(n int, line []byte) bool {
		if line = bytes.TrimFunc(line, pycompat.IsSpace); len(line) == 0 {
			return true
		}
		if e := yield(n, line); e != nil {
			err = fmt.Errorf("line %d: %w", n, e)
		}
		return err == nil
	})
	return err
}

// strictCheck checks what encoding/json lets through: invalid UTF-8, lone
// surrogate escapes, duplicate member names, and JSON white space only
// around the value.
func strictCheck(line []byte) error {
	if !utf8.Valid(line) {
		return fmt.Errorf("invalid UTF-8")
	}
	if err := checkSurrogates(line); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	type frame struct {
		obj    bool
		keys   map[string]bool
		expKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.expKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k := tok.(string)
			if top.keys[k] {
				return fmt.Errorf("duplicate member %q", k)
			}
			top.keys[k] = true
			top.expKey = false
			continue
		}
		if top != nil && top.obj {
			top.expKey = true
		}
		switch d := tok.(type) {
		case json.Delim:
			switch d {
			case '{':
				stack = append(stack, &frame{obj: true, keys: map[string]bool{}, expKey: true})
			case '[':
				stack = append(stack, &frame{})
			case ']':
				stack = stack[:len(stack)-1]
			}
		case json.Number:
			if _, err := strconv.ParseFloat(string(d), 64); err != nil {
				return fmt.Errorf("number %s: %v", d, err)
			}
		}
	}
	return nil
}

func checkSurrogates(b []byte) error {
	in := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if !in {
			if c == '"' {
				in = true
			}
			continue
		}
		switch c {
		case '"':
			in = false
		case '\\':
			i++
			if i < len(b) && b[i] == 'u' && i+4 < len(b) {
				v, err := strconv.ParseUint(string(b[i+1:i+5]), 16, 16)
				if err != nil {
					return fmt.Errorf("bad \\u escape")
				}
				i += 4
				switch {
				case v >= 0xdc00 && v <= 0xdfff:
					return fmt.Errorf("lone low surrogate")
				case v >= 0xd800 && v <= 0xdbff:
					if i+6 >= len(b) || b[i+1] != '\\' || b[i+2] != 'u' {
						return fmt.Errorf("lone high surrogate")
					}
					w, err := strconv.ParseUint(string(b[i+3:i+7]), 16, 16)
					if err != nil || w < 0xdc00 || w > 0xdfff {
						return fmt.Errorf("high surrogate without low")
					}
					i += 6
				}
			}
		}
	}
	return nil
}

func decodeObj(line []byte) (map[string]any, error) {
	if err := strictCheck(line); err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("not an object")
	}
	return m, nil
}

func strList(m map[string]any, key string) error {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("%s: want an array, got %T", key, v)
	}
	for i, e := range list {
		if _, ok := e.(string); !ok {
			return fmt.Errorf("%s.%d: want a string, got %T", key, i, e)
		}
	}
	return nil
}

func dotPath(field string, v any) error {
	if v == nil {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("%s: want a string", field)
	}
	for _, p := range strings.Split(s, ".") {
		if p == "" {
			return fmt.Errorf("%s: empty path component in %q", field, s)
		}
	}
	return nil
}

func span(field string, v any) error {
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return fmt.Errorf("%s: want [start,end]", field)
	}
	s, ok1 := a[0].(float64)
	e, ok2 := a[1].(float64)
	if !ok1 || !ok2 || s < 0 || e < s || s != float64(int64(s)) || e != float64(int64(e)) {
		return fmt.Errorf("%s: want 0 <= start <= end integers, got %v", field, a)
	}
	return nil
}

// checkGold checks one gold line against SPEC §2.1.
func checkGold(line []byte) (map[string]any, error) {
	m, err := decodeObj(line)
	if err != nil {
		return nil, err
	}
	if q, ok := m["qid"].(string); !ok || q == "" {
		return nil, fmt.Errorf("qid: want a non-empty string, got %#v", m["qid"])
	}
	if _, ok := m["answerable"].(bool); !ok {
		return nil, fmt.Errorf("answerable: want a bool, got %#v", m["answerable"])
	}
	for _, k := range []string{"gold_claim_substr", "gold_citations", "relevant", "negatives", "paraphrases", "constraints"} {
		if err := strList(m, k); err != nil {
			return nil, err
		}
	}
	if v, ok := m["question"]; ok {
		if _, ok := v.(string); !ok {
			return nil, fmt.Errorf("question: want a string")
		}
	}
	if v, ok := m["type"]; ok {
		if _, ok := v.(string); !ok {
			return nil, fmt.Errorf("type: want a string")
		}
	}
	if err := dotPath("anchor_section", m["anchor_section"]); err != nil {
		return nil, err
	}
	if err := spans(m, "relevant_offsets"); err != nil {
		return nil, err
	}
	return m, nil
}

// spans checks m[field], when there is one: an object of spans by id.
func spans(m map[string]any, field string) error {
	v, ok := m[field]
	if !ok {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: want an object", field)
	}
	for id, sp := range obj {
		if err := span(field+"."+id, sp); err != nil {
			return err
		}
	}
	return nil
}

// traceQID is the reference's t.get("qid") or t.get("q_id").
func traceQID(m map[string]any) string {
	if s, ok := m["qid"].(string); ok && s != "" {
		return s
	}
	s, _ := m["q_id"].(string)
	return s
}

// checkTrace checks one trace line against SPEC §2.2.
func checkTrace(line []byte) (map[string]any, error) {
	m, err := decodeObj(line)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"qid", "q_id"} {
		if v, ok := m[k]; ok {
			if _, ok := v.(string); !ok {
				return nil, fmt.Errorf("%s: want a string", k)
			}
		}
	}
	if traceQID(m) == "" {
		return nil, fmt.Errorf("qid: missing")
	}
	if err := strList(m, "retrieved_ids"); err != nil {
		return nil, err
	}
	for _, k := range []string{"q", "query", "lambda_state", "λ_state", "arm", "event_id", "request_id", "index_hash"} {
		if v, ok := m[k]; ok {
			if _, ok := v.(string); !ok {
				return nil, fmt.Errorf("%s: want a string", k)
			}
		}
	}
	for _, k := range []string{"delta_s", "ΔS"} {
		if v, ok := m[k]; ok {
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%s: want an array", k)
			}
			for i, e := range list {
				f, ok := e.(float64)
				if !ok || f < 0 || f > 1 {
					return nil, fmt.Errorf("%s.%d: want a number in [0,1], got %v", k, i, e)
				}
			}
		}
	}
	if v, ok := m["delta_s_cited"]; ok {
		if f, ok := v.(float64); !ok || f < 0 || f > 1 {
			return nil, fmt.Errorf("delta_s_cited: want a number in [0,1]")
		}
	}
	if v, ok := m["ts"]; ok {
		s, _ := v.(string)
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, fmt.Errorf("ts: %v", err)
		}
	}
	for _, k := range []string{"paraphrase", "seed"} {
		if v, ok := m[k]; ok {
			if f, ok := v.(float64); !ok || f != float64(int64(f)) {
				return nil, fmt.Errorf("%s: want an int", k)
			}
		}
	}
	if v, ok := m["topk"]; ok {
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("topk: want an array")
		}
		for i, e := range list {
			item, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("topk.%d: want an object", i)
			}
			if id, ok := item["id"].(string); !ok || id == "" {
				return nil, fmt.Errorf("topk.%d.id: required", i)
			}
			if off, ok := item["offsets"]; ok {
				if err := span(fmt.Sprintf("topk.%d.offsets", i), off); err != nil {
					return nil, err
				}
			}
			if err := dotPath(fmt.Sprintf("topk.%d.section_id", i), item["section_id"]); err != nil {
				return nil, err
			}
		}
	}
	if v, ok := m["answer_json"]; ok && v != nil {
		aj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("answer_json: want an object or null")
		}
		if c, ok := aj["claim"]; ok && c != nil {
			if _, ok := c.(string); !ok {
				return nil, fmt.Errorf("answer_json.claim: want a string or null")
			}
		}
		if c, ok := aj["citations"].([]any); ok {
			for i, e := range c {
				if _, ok := e.(string); !ok {
					return nil, fmt.Errorf("answer_json.citations.%d: want a string", i)
				}
			}
		}
		if err := spans(aj, "citation_offsets"); err != nil {
			return nil, err
		}
	}
	return m, nil
}
