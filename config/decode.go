package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The file is read into a yaml.Node tree and walked against the Config type
// by hand rather than with yaml's KnownFields decoder, so that every problem
// names its key path ("unknown field \"x\" in nats.tls", "join.ttl: invalid
// duration") and all of them are reported at once, not only the first.

// maxNodes bounds the work of one document, aliases expanded: a config file
// has a few hundred nodes; a billion-laughs document stops here.
const maxNodes = 100000

var (
	durationType      = reflect.TypeFor[Duration]()
	gateType          = reflect.TypeFor[Gate]()
	analysisCheckType = reflect.TypeFor[AnalysisCheck]()
)

type decoder struct {
	file    string
	data    []byte
	errs    []*Error
	lines   map[string]int // key path → line, for keys given a non-null value
	budget  int
	merging map[*yaml.Node]bool // mappings being merged, against <<: cycles
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, lines: map[string]int{}, budget: maxNodes, merging: map[*yaml.Node]bool{}}
}

func (d *decoder) errorf(line int, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// document decodes the one YAML document of data into c.
func (d *decoder) document(data []byte, c *Config) {
	d.data = data
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if !errors.Is(err, io.EOF) { // io.EOF: an empty file, all defaults
			d.yamlError(err)
		}
		return
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		d.errorf(extra.Line, "more than one YAML document; the configuration is one document")
		return
	case !errors.Is(err, io.EOF):
		d.yamlError(err)
		return
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return
		}
		root = root.Content[0]
	}
	root = d.resolve(root)
	if root == nil || isNull(root) {
		return
	}
	if root.Kind != yaml.MappingNode {
		d.errorf(root.Line, "the configuration must be a mapping of keys, got %s", describe(root))
		return
	}
	d.mapping(root, reflect.ValueOf(c).Elem(), "")
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlError turns an error of the yaml package into problems reading
// "FILE:LINE: message": syntax errors ("yaml: line 3: did not find expected
// key") and, should one escape, the lines of a *yaml.TypeError.
func (d *decoder) yamlError(err error) {
	var te *yaml.TypeError
	msgs := []string{err.Error()}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	for _, m := range msgs {
		line, msg := 0, strings.TrimPrefix(m, "yaml: ")
		if g := yamlLineRE.FindStringSubmatch(m); g != nil {
			line, _ = strconv.Atoi(g[1])
			msg = g[2]
		}
		line = syntaxLine(line, msg)
		if g := unknownAnchorRE.FindStringSubmatch(msg); g != nil && line == 0 {
			line = lineOf(d.data, "*"+g[1])
		}
		d.errorf(line, "%s", msg)
	}
}

var unknownAnchorRE = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// lineOf is the line of the first occurrence of s in data, 0 if none.
func lineOf(data []byte, s string) int {
	i := bytes.Index(data, []byte(s))
	if i < 0 {
		return 0
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}

// syntaxLine corrects the line yaml.v3 gives with a syntax error: parser
// errors count lines from 0, scanner errors from 1, and neither says
// "line 0" (the first line).
func syntaxLine(line int, msg string) int {
	for _, p := range parserProblems {
		if msg == p {
			return line + 1
		}
	}
	for _, p := range scannerProblems {
		if msg == p {
			return max(line, 1)
		}
	}
	return line
}

// The problems reported by yaml.v3's parser and scanner (parserc.go,
// scannerc.go).
var (
	parserProblems = []string{
		"did not find expected <stream-start>", "did not find expected <document start>",
		"found undefined tag handle", "did not find expected node content",
		"did not find expected '-' indicator", "did not find expected key",
		"did not find expected ',' or ']'", "did not find expected ',' or '}'",
		"found duplicate %YAML directive", "found incompatible YAML document",
		"found duplicate %TAG directive",
	}
	scannerProblems = []string{
		"found character that cannot start any token", "could not find expected ':'",
		"block sequence entries are not allowed in this context",
		"mapping keys are not allowed in this context",
		"mapping values are not allowed in this context",
		"found unknown directive name", "did not find expected comment or line break",
		"could not find expected directive name", "found unexpected non-alphabetical character",
		"did not find expected digit or '.' character", "found extremely long version number",
		"did not find expected version number", "did not find expected whitespace",
		"did not find expected whitespace or line break",
		"did not find expected alphabetic or numeric character",
		"did not find the expected '>'", "found an indentation indicator equal to 0",
		"found a tab character where an indentation space is expected",
		"found unexpected document indicator", "found unexpected end of stream",
		"found unknown escape character", "did not find expected hexdecimal number",
		"found invalid Unicode character escape code",
		"found a tab character that violates indentation",
	}
)

// resolve follows aliases and charges the node to the budget; nil when the
// budget is spent (the problem is reported once).
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if d.budget <= 0 {
		return nil
	}
	d.budget--
	if d.budget == 0 {
		d.errorf(0, "the document is too large or uses too many aliases (over %d nodes)", maxNodes)
		return nil
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names the kind of a node for "want X, got Y" messages; scalars
// are not quoted here, so a misplaced secret does not end up in a message.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!bool":
			return "a boolean"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		}
		return "a string"
	}
	return "a YAML node of another kind"
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func where(path string) string {
	if path == "" {
		return "at the top level"
	}
	return "in " + path
}

// fieldsByKey maps the yaml keys of struct type t to field indexes.
func fieldsByKey(t reflect.Type) (map[string]int, []string) {
	m := map[string]int{}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "-" {
			continue
		}
		if key == "" {
			key = strings.ToLower(f.Name)
		}
		m[key] = i
		keys = append(keys, key)
	}
	return m, keys
}

// mapping decodes mapping node n into struct or map v, key by key; keys
// left out keep their value in v.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if v.Kind() == reflect.Map {
		d.mapEntries(n, v, path)
		return
	}
	fields, _ := fieldsByKey(v.Type())
	d.entries(n, v, path, func(key string, k, val *yaml.Node) {
		idx, ok := fields[key]
		if !ok {
			d.errorf(k.Line, "unknown field %q %s", key, where(path))
			return
		}
		d.value(val, v.Field(idx), joinPath(path, key), k.Line)
	})
}

// mapEntries decodes mapping node n into map v (string keys), key by key:
// a key's value replaces v's value under that key as a whole, and a null
// keeps it. A null key v does not have yet gets the zero value, for
// Validate to judge (an empty check set is an error).
func (d *decoder) mapEntries(n *yaml.Node, v reflect.Value, path string) {
	t := v.Type()
	if t.Key().Kind() != reflect.String {
		panic("config: no decoder for " + t.String())
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	d.entries(n, v, path, func(key string, k, val *yaml.Node) {
		child := joinPath(path, key)
		kv := reflect.ValueOf(key).Convert(t.Key())
		r := d.resolve(val)
		if r == nil {
			return
		}
		if isNull(r) {
			if !v.MapIndex(kv).IsValid() {
				d.lines[child] = k.Line
				v.SetMapIndex(kv, reflect.Zero(t.Elem()))
			}
			return
		}
		elem := reflect.New(t.Elem()).Elem()
		d.value(r, elem, child, k.Line)
		v.SetMapIndex(kv, elem)
	})
}

// entries calls f with each key of mapping n and its value, after applying
// the merge keys (so that the mapping's own keys win over merged ones), and
// reports keys that are not strings or are given twice.
func (d *decoder) entries(n *yaml.Node, v reflect.Value, path string, f func(key string, k, val *yaml.Node)) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; isMergeKey(k) {
			d.merge(n.Content[i+1], v, path, k.Line)
		}
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			continue
		}
		k = d.resolve(k)
		if k == nil {
			return
		}
		if k.Kind != yaml.ScalarNode {
			d.errorf(k.Line, "%s: a key must be a string, got %s", pathOrTop(path), describe(k))
			continue
		}
		key := k.Value
		if first, dup := seen[key]; dup {
			d.errorf(k.Line, "duplicate key %q %s (first at line %d)", key, where(path), first)
			continue
		}
		seen[key] = k.Line
		f(key, k, val)
	}
}

func pathOrTop(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.Tag == "!!merge" || k.Tag == "tag:yaml.org,2002:merge")
}

// merge applies the value of a "<<" key: a mapping or a list of mappings,
// into struct or map v.
func (d *decoder) merge(val *yaml.Node, v reflect.Value, path string, line int) {
	val = d.resolve(val)
	if val == nil {
		return
	}
	var sources []*yaml.Node
	switch val.Kind {
	case yaml.MappingNode:
		sources = []*yaml.Node{val}
	case yaml.SequenceNode:
		// Earlier mappings of the list win, so apply them last.
		for i := len(val.Content) - 1; i >= 0; i-- {
			sources = append(sources, val.Content[i])
		}
	default:
		d.errorf(line, "%s: the merge key << wants a mapping or a list of mappings, got %s", pathOrTop(path), describe(val))
		return
	}
	for _, s := range sources {
		s = d.resolve(s)
		if s == nil {
			return
		}
		if s.Kind != yaml.MappingNode {
			d.errorf(line, "%s: the merge key << wants a mapping or a list of mappings, got %s", pathOrTop(path), describe(s))
			continue
		}
		if d.merging[s] {
			d.errorf(line, "%s: the merge key << refers to a mapping that contains it", pathOrTop(path))
			continue
		}
		d.merging[s] = true
		d.mapping(s, v, path)
		delete(d.merging, s)
	}
}

// value decodes node n into v; line is the line of the key (or list item)
// n belongs to. A null value leaves v as it is: the default.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string, line int) {
	n = d.resolve(n)
	if n == nil || isNull(n) {
		return
	}
	d.lines[path] = line
	if tag := n.ShortTag(); !strings.HasPrefix(tag, "!!") {
		d.errorf(line, "%s: unsupported YAML tag %q", path, tag)
		return
	}
	t := v.Type()
	if t == durationType {
		s, ok := d.scalar(n, path, "a duration", line)
		if !ok {
			return
		}
		dur, err := parseDuration(s)
		if err != nil {
			d.errorf(line, "%s: %v", path, err)
			return
		}
		v.SetInt(int64(dur))
		return
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.errorf(line, "%s: want a mapping, got %s", path, describe(n))
			return
		}
		d.mapping(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.errorf(line, "%s: want a list, got %s", path, describe(n))
			return
		}
		out := reflect.MakeSlice(t, 0, len(n.Content))
		for i, item := range n.Content {
			itemPath := fmt.Sprintf("%s[%d]", path, i)
			elem := reflect.New(t.Elem()).Elem()
			r := d.resolve(item)
			if r == nil {
				return
			}
			if isNull(r) {
				d.errorf(item.Line, "%s: want %s, got null", itemPath, want(t.Elem()))
				continue
			}
			d.value(r, elem, itemPath, item.Line)
			switch t.Elem() {
			case gateType:
				elem.Addr().Interface().(*Gate).Line = item.Line
			case analysisCheckType:
				elem.Addr().Interface().(*AnalysisCheck).Line = item.Line
			}
			out = reflect.Append(out, elem)
		}
		v.Set(out)
	case reflect.String:
		if s, ok := d.scalar(n, path, "a string", line); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		s, ok := d.scalar(n, path, "true or false", line)
		if !ok {
			return
		}
		var b bool
		if n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.errorf(line, "%s: want true or false, got %q", path, s)
			return
		}
		v.SetBool(b)
	case reflect.Int:
		s, ok := d.scalar(n, path, "an integer", line)
		if !ok {
			return
		}
		var i int64
		if n.ShortTag() != "!!int" || n.Decode(&i) != nil || v.OverflowInt(i) {
			d.errorf(line, "%s: want an integer, got %q", path, s)
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		s, ok := d.scalar(n, path, "a number", line)
		if !ok {
			return
		}
		var f float64
		if tag := n.ShortTag(); (tag != "!!int" && tag != "!!float") || n.Decode(&f) != nil {
			d.errorf(line, "%s: want a number, got %q", path, s)
			return
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			d.errorf(line, "%s: want a finite number, got %q", path, s)
			return
		}
		v.SetFloat(f)
	default:
		panic("config: no decoder for " + t.String())
	}
}

// scalar returns the text of scalar node n, or reports that a scalar was
// wanted.
func (d *decoder) scalar(n *yaml.Node, path, wanted string, line int) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.errorf(line, "%s: want %s, got %s", path, wanted, describe(n))
		return "", false
	}
	return n.Value, true
}

// want names what a value of type t is written as.
func want(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration"
	case t.Kind() == reflect.Struct, t.Kind() == reflect.Map:
		return "a mapping"
	case t.Kind() == reflect.Slice:
		return "a list"
	case t.Kind() == reflect.Int:
		return "an integer"
	case t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Bool:
		return "true or false"
	}
	return "a string"
}
