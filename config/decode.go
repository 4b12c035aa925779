package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse decodes with a yaml.Decoder in KnownFields mode. Before yaml.v3
// decodes the tree, a node pass (check) does what yaml.v3 does not or does
// differently: it expands aliases against a node budget, reports duplicate
// keys, keys that are not strings, bad merge keys and custom tags and
// leaves them out (yaml.v3 would stop at the first, or skip a whole
// mapping), flattens merge keys, and records the line of each key path for
// Validate; then the strict pass (strict) refuses the scalars yaml.v3 would
// read too loosely, by the Go type of the field each is read into. Every
// node of the checked tree gets its index in that record as its Line, so
// the "line N:" of each yaml.v3 problem names one node, and the problem is
// reported with its key path and file line ("unknown field \"x\" in
// nats.tls", "join.ttl: invalid duration").

// maxNodes bounds the work of one document, aliases expanded: a config file
// has a few hundred nodes; a billion-laughs document stops here.
const maxNodes = 100000

type decoder struct {
	file     string
	data     []byte
	errs     []problem
	lines    map[string]int // key path → line, for keys given a non-null value
	nulls    map[string]int // key path → line, for keys given null
	budget   int
	merging  map[*yaml.Node]bool // merge sources being read, against <<: cycles
	open     map[*yaml.Node]bool // mappings and lists being read, against alias cycles
	nodes    []placed            // the checked tree's nodes; a node's Line is its index + 1
	reported map[int]bool        // nodes with a problem already reported
	// decoded: the checked tree (root) was decoded into the Config,
	// whatever problems it had, so that the rest can be validated.
	decoded bool
	root    *yaml.Node
}

// problem is an error with the column of its key, to order the problems of
// one line as they stand in it.
type problem struct {
	err *Error
	col int
	key bool // an unknown key: the value beside it was not read at all
}

// placed is where a node of the checked tree stands in the file.
type placed struct {
	node      *yaml.Node
	path      string // the value's key path; for a key, its mapping's
	line, col int    // of the key or list item messages name
	key       bool
	null      bool // a null list item, given to yaml.v3 as an empty list
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, lines: map[string]int{}, nulls: map[string]int{},
		budget: maxNodes, merging: map[*yaml.Node]bool{}, open: map[*yaml.Node]bool{}, reported: map[int]bool{}}
}

func (d *decoder) errorf(line, col int, format string, args ...any) {
	d.errs = append(d.errs, problem{err: &Error{File: d.file, Line: line, Msg: fmt.Sprintf(format, args...)}, col: col})
}

// err joins the problems in file order.
func (d *decoder) err() error {
	slices.SortStableFunc(d.errs, func(a, b problem) int { return a.col - b.col })
	errs := make([]*Error, len(d.errs))
	for i, p := range d.errs {
		errs[i] = p.err
	}
	return joinErrors(errs)
}

// document decodes the one YAML document of data into c.
func (d *decoder) document(data []byte, c *Config) {
	d.data = data
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&configFile{d: d, c: c}); err != nil {
		if !errors.Is(err, io.EOF) { // io.EOF: an empty file, all defaults
			d.yamlError(err)
		}
		return
	}
	// A second document, or a syntax error after the first, is the only
	// problem reported.
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		d.errs, d.decoded = nil, false
		d.errorf(extra.Line, 0, "more than one YAML document; the configuration is one document")
	case !errors.Is(err, io.EOF):
		d.errs, d.decoded = nil, false
		d.yamlError(err)
	}
}

// configFile is what the yaml.Decoder decodes: the node pass, then c.
type configFile struct {
	d *decoder
	c *Config
}

// UnmarshalYAML checks the document's root node and replaces it with the
// checked tree before yaml.v3 decodes it into the Config. yaml.v3 calls it
// only for a root that is not null (an empty document is all defaults).
func (f *configFile) UnmarshalYAML(unmarshal func(any) error) error {
	var root nodeOf
	if err := unmarshal(&root); err != nil {
		return err
	}
	d := f.d
	if root.Kind != yaml.MappingNode {
		d.errorf(root.Line, 0, "the configuration must be a mapping of keys, got %s", describe(root.Node))
		return nil
	}
	checked := d.mapping(root.Node, "", nil)
	if d.budget <= 0 {
		return nil // the tree is cut short; its problems so far are reported
	}
	*root.Node = *d.place(checked, placed{})
	d.root = root.Node
	problems := strict(nil, root.Node, reflect.TypeFor[Config]())
	err := unmarshal(f.c)
	var te *yaml.TypeError
	switch {
	case errors.As(err, &te):
		problems = append(problems, te.Errors...)
	case err != nil:
		d.typeErrors(err)
	}
	if len(problems) > 0 {
		// The strict problems first: a node's first problem is its only one.
		d.typeErrors(&yaml.TypeError{Errors: problems})
	}
	d.decoded = true
	return nil
}

// decodeRest decodes the checked tree into c once more without the nodes
// a problem was reported at: an unknown key is left out, and a value of
// the wrong kind is null, which keeps its default (a list with a bad item
// keeps its default as a whole). yaml.v3 drops a whole gate or check whose
// mapping had a problem; read this way it stays, so that Validate reports
// the problems of its other keys in the same run.
func (d *decoder) decodeRest(c *Config) {
	parent := map[*yaml.Node]*yaml.Node{}
	var link func(n *yaml.Node)
	link = func(n *yaml.Node) {
		for _, child := range n.Content {
			parent[child] = n
			link(child)
		}
	}
	link(d.root)
	drop := map[*yaml.Node]bool{}
	for id := range d.reported {
		at := d.nodes[id-1]
		n := at.node
		if at.key {
			drop[n] = true
			continue
		}
		for parent[n] != nil && parent[n].Kind == yaml.SequenceNode {
			n = parent[n]
		}
		*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: n.Line}
	}
	var prune func(n *yaml.Node)
	prune = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			kept := n.Content[:0]
			for i := 0; i+1 < len(n.Content); i += 2 {
				if !drop[n.Content[i]] {
					kept = append(kept, n.Content[i], n.Content[i+1])
				}
			}
			n.Content = kept
		}
		for _, child := range n.Content {
			prune(child)
		}
	}
	prune(d.root)
	_ = d.root.Decode(c) // what is left reads: its problems are reported
}

// nodeOf captures the node being decoded: yaml.v3 hands an Unmarshaler the
// node itself, and decoding into a *yaml.Node from an UnmarshalYAML(func)
// method would decode the node's fields instead.
type nodeOf struct{ *yaml.Node }

// UnmarshalYAML keeps n.
func (r *nodeOf) UnmarshalYAML(n *yaml.Node) error {
	r.Node = n
	return nil
}

// noteLines gives each gate and check the line it was read from, and a check
// set given as null that the shipped sets lack (decoded as an empty set, for
// Validate to report) the line of its key.
func (d *decoder) noteLines(c *Config) {
	for i := range c.Gates {
		c.Gates[i].Line = d.lines[fmt.Sprintf("gates[%d]", i)]
	}
	for name, set := range c.Analysis.Checks {
		p := setPath(name)
		if _, given := d.lines[p]; !given && set == nil {
			if line, ok := d.nulls[p]; ok {
				d.lines[p] = line
			}
		}
		for i := range set {
			set[i].Line = d.lines[fmt.Sprintf("%s[%d]", p, i)]
		}
	}
}

// The node pass. Each function returns a fresh copy of what it checked, so
// that the original tree, which aliases share, stays as read.

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
		d.errorf(0, 0, "the document is too large or uses too many aliases (over %d nodes)", maxNodes)
		return nil
	}
	return n
}

// place records where n stands and numbers it.
func (d *decoder) place(n *yaml.Node, at placed) *yaml.Node {
	at.node = n
	d.nodes = append(d.nodes, at)
	n.Line, n.Column = len(d.nodes), 0
	return n
}

// value checks n, the value at path of the key or list item at line:col;
// nil leaves it out (a problem is reported). A null value stays null:
// yaml.v3 then keeps the default.
func (d *decoder) value(n *yaml.Node, path string, line, col int) *yaml.Node {
	if n == nil {
		return nil
	}
	at := placed{path: path, line: line, col: col}
	if isNull(n) {
		d.nulls[path] = line
		return d.place(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}, at)
	}
	d.lines[path] = line
	if tag := n.ShortTag(); !strings.HasPrefix(tag, "!!") {
		d.errorf(line, col, "%s: unsupported YAML tag %q", path, tag)
		return nil
	}
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		// An alias inside the node it names (x: &a [*a]) would be read
		// forever, each level's path longer than the last.
		if d.open[n] {
			d.errorf(line, col, "%s: an alias refers to a mapping or list that contains it", path)
			return nil
		}
		d.open[n] = true
		defer delete(d.open, n)
		if n.Kind == yaml.MappingNode {
			return d.place(d.mapping(n, path, nil), at)
		}
		return d.place(d.sequence(n, path), at)
	}
	return d.place(scalar(n), at)
}

// sequence checks the items of list n. yaml.v3 would skip a null item; it
// becomes an empty list, which no item type takes, and the message says null.
func (d *decoder) sequence(n *yaml.Node, path string) *yaml.Node {
	c := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		r := d.resolve(item)
		if r == nil {
			break
		}
		if isNull(r) {
			empty := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			c.Content = append(c.Content, d.place(empty, placed{path: p, line: item.Line, col: item.Column, null: true}))
		} else if v := d.value(r, p, item.Line, item.Column); v != nil {
			c.Content = append(c.Content, v)
		}
	}
	return c
}

// mapping checks the keys of mapping n and flattens its merge keys: the
// mapping's own keys win over merged ones. Keys in taken, those of a mapping
// merging n, are left out.
func (d *decoder) mapping(n *yaml.Node, path string, taken map[string]bool) *yaml.Node {
	c := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	var merges []*yaml.Node // key, value, key, value…
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMergeKey(k) {
			merges = append(merges, k, v)
			continue
		}
		if k = d.resolve(k); k == nil {
			return c
		}
		if k.Kind != yaml.ScalarNode {
			d.errorf(k.Line, k.Column, "%s: a key must be a string, got %s", pathOrTop(path), describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.errorf(k.Line, k.Column, "duplicate key %q %s (first at line %d)", k.Value, where(path), first)
			continue
		}
		seen[k.Value] = k.Line
		if taken[k.Value] {
			continue
		}
		if val := d.value(d.resolve(v), joinPath(path, k.Value), k.Line, k.Column); val != nil {
			// Any scalar key is the string it is written as, a null or
			// number too.
			key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k.Value}
			c.Content = append(c.Content, d.place(key, placed{path: path, line: k.Line, col: k.Column, key: true}), val)
		}
	}
	if len(merges) > 0 {
		d.merge(c, merges, path, taken)
	}
	return c
}

// merge appends to c the keys of the mappings its merge keys name, those c
// (or a mapping merging it) has not: a later << wins over an earlier one,
// and in a list of mappings the earlier mapping wins.
func (d *decoder) merge(c *yaml.Node, merges []*yaml.Node, path string, taken map[string]bool) {
	have := maps.Clone(taken)
	if have == nil {
		have = map[string]bool{}
	}
	for i := 0; i < len(c.Content); i += 2 {
		have[c.Content[i].Value] = true
	}
	for i := len(merges) - 2; i >= 0; i -= 2 {
		k, v := merges[i], d.resolve(merges[i+1])
		if v == nil {
			return
		}
		sources := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			sources = v.Content
		}
		for _, s := range sources {
			if s = d.resolve(s); s == nil {
				return
			}
			if s.Kind != yaml.MappingNode {
				d.errorf(k.Line, k.Column, "%s: the merge key << wants a mapping or a list of mappings, got %s", pathOrTop(path), describe(s))
				continue
			}
			if d.merging[s] {
				d.errorf(k.Line, k.Column, "%s: the merge key << refers to a mapping that contains it", pathOrTop(path))
				continue
			}
			d.merging[s] = true
			m := d.mapping(s, path, have)
			delete(d.merging, s)
			for j := 0; j < len(m.Content); j += 2 {
				have[m.Content[j].Value] = true
			}
			c.Content = append(c.Content, m.Content...)
		}
	}
}

// scalar copies scalar n in the form yaml.v3 should read: an explicit
// !!binary is the text as written, as any string of the file, and an
// explicit tag its value does not fit (!!int abc) is dropped, for the
// message to say what is wrong with the value; yaml.v3 would stop decoding
// at either.
func scalar(n *yaml.Node) *yaml.Node {
	c := &yaml.Node{Kind: yaml.ScalarNode, Tag: n.Tag, Value: n.Value, Style: n.Style}
	if n.Style&yaml.TaggedStyle == 0 {
		return c
	}
	var v any
	switch tag := n.ShortTag(); {
	case tag == "!!binary":
		c.Tag = "!!str"
	case n.Decode(&v) != nil:
		c.Tag, c.Style = "", c.Style&^yaml.TaggedStyle
		c.Tag = c.ShortTag()
	}
	return c
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.Tag == "!!merge" || k.Tag == "tag:yaml.org,2002:merge")
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

func pathOrTop(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

// Problems of the decoding.

var yamlLineRE = regexp.MustCompile(`(?s)^(?:yaml: )?line (\d+): (.*)$`)

// typeErrors reports the problems yaml.v3 (or an UnmarshalYAML method) found
// decoding the checked tree, "line N: …" naming node N, at the key path and
// line of the node: "field x not found in type T" (KnownFields) is an
// unknown field, "cannot unmarshal … into T" a value of the wrong kind, and
// the messages of the UnmarshalYAML methods are prefixed with the path. The
// first problem of a node is its only one: a strict check and yaml.v3 may
// both refuse a value.
func (d *decoder) typeErrors(err error) {
	var te *yaml.TypeError
	switch {
	case err == nil:
		return
	case !errors.As(err, &te):
		d.errorf(0, 0, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		return
	}
	for _, m := range te.Errors {
		g := yamlLineRE.FindStringSubmatch(m)
		if g == nil {
			d.errorf(0, 0, "%s", m)
			continue
		}
		id, _ := strconv.Atoi(g[1])
		msg := g[2]
		if id < 1 || id > len(d.nodes) {
			d.errorf(0, 0, "%s", msg)
			continue
		}
		if d.reported[id] {
			continue
		}
		d.reported[id] = true
		at := d.nodes[id-1]
		if at.key && strings.HasPrefix(msg, "field ") {
			d.errorf(at.line, at.col, "unknown field %q %s%s", at.node.Value, where(at.path), didYouMean(at.node.Value, keysAt(at.path)))
			d.errs[len(d.errs)-1].key = true
			continue
		}
		if into := strings.LastIndex(msg, " into "); strings.HasPrefix(msg, "cannot unmarshal ") && into > 0 {
			want := wantOf(msg[into+len(" into "):])
			msg = fmt.Sprintf("want %s, got %s", want, got(at, want))
		}
		d.errorf(at.line, at.col, "%s: %s", at.path, msg)
	}
}

// wantOf names what a value of Go type t (as yaml.v3 prints it) is written as.
func wantOf(t string) string {
	switch {
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case t == "float64":
		return "a number"
	case t == "int":
		return "an integer"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	}
	return "a mapping" // a struct or a map
}

// got names the value at for a "want …, got …" message: a scalar given for
// a scalar is quoted.
func got(at placed, want string) string {
	switch {
	case at.null:
		return "null"
	case at.node.Kind == yaml.ScalarNode && want != "a mapping" && want != "a list":
		return strconv.Quote(at.node.Value)
	}
	return describe(at.node)
}

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
		d.errorf(line, 0, "%s", msg)
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
	if slices.Contains(parserProblems, msg) {
		return line + 1
	}
	if slices.Contains(scannerProblems, msg) {
		return max(line, 1)
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

// Strict scalars. yaml.v3 reads 1.5 into an int (as 1), yes and on as
// true and .nan as a number. Before it decodes the checked tree, strict
// walks the tree beside the Go types it decodes into and refuses such
// values in every integer, number and boolean field: what each key holds
// is read off the struct fields, so no list of keys repeats them. Strings,
// durations, lists and mappings yaml.v3 checks itself.

// kind is what a scalar field holds.
type kind int

const (
	integer kind = iota + 1
	number
	boolean
)

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// scalarKind is what a value of type t is written as, 0 for a type that
// reads itself (Duration) or that yaml.v3 checks strictly.
func scalarKind(t reflect.Type) kind {
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return 0
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return integer
	case reflect.Float32, reflect.Float64:
		return number
	case reflect.Bool:
		return boolean
	}
	return 0
}

// yamlField is the field of struct t that key names, by its yaml tag.
func yamlField(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == key && name != "-" && f.IsExported() {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// strict appends the problems of the scalars of node n, which yaml.v3 is
// to decode into a value of type t, in yaml.v3's "line N: …" form. A node
// of another kind than t wants is left to yaml.v3 to refuse, as is an
// unknown key.
func strict(problems []string, n *yaml.Node, t reflect.Type) []string {
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if f, ok := yamlField(t, n.Content[i].Value); ok {
				problems = strict(problems, n.Content[i+1], f.Type)
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			problems = strict(problems, n.Content[i+1], t.Elem())
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for _, item := range n.Content {
			problems = strict(problems, item, t.Elem())
		}
	default:
		if want := scalarKind(t); want != 0 {
			problems = strictScalar(problems, n, want)
		}
	}
	return problems
}

// strictScalar appends the problem of scalar n, read as a value of kind
// want, if any. Null keeps the default, and other kinds of node are
// yaml.v3's to refuse.
func strictScalar(problems []string, n *yaml.Node, want kind) []string {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		return problems
	}
	msg := ""
	switch tag := n.ShortTag(); want {
	case integer:
		if tag != "!!int" {
			msg = "want an integer, got %q"
		}
	case boolean:
		if tag != "!!bool" {
			msg = "want true or false, got %q"
		}
	case number:
		var f float64
		switch {
		case tag != "!!int" && tag != "!!float" || n.Decode(&f) != nil:
			msg = "want a number, got %q"
		case math.IsNaN(f) || math.IsInf(f, 0):
			msg = "want a finite number, got %q"
		}
	}
	if msg == "" {
		return problems
	}
	return append(problems, fmt.Sprintf("line %d: "+msg, n.Line, n.Value))
}

// UnmarshalYAML reads the configuration over the values c holds (Parse
// starts from Default): a key left out or null keeps its value.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	type plain Config
	windows, ks := c.Windows, c.K
	err := unmarshal((*plain)(c))
	// yaml.v3 sets a list given as null to nil.
	if c.Windows == nil {
		c.Windows = windows
	}
	if c.K == nil {
		c.K = ks
	}
	return err
}

// UnmarshalYAML reads the analysis section. Check sets merge into the ones
// a holds by name; checks: null keeps them all, and a set given as null
// keeps the one a holds (yaml.v3 would set both to nil).
func (a *AnalysisConfig) UnmarshalYAML(unmarshal func(any) error) error {
	type plain AnalysisConfig
	held := maps.Clone(a.Checks)
	err := unmarshal((*plain)(a))
	if a.Checks == nil {
		a.Checks = held
	}
	for name, set := range a.Checks {
		if set == nil && held[name] != nil {
			a.Checks[name] = held[name]
		}
	}
	return err
}
