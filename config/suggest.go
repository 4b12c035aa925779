package config

import (
	"fmt"
	"reflect"
	"strings"
)

// didYouMean is `; did you mean "c"?` for the candidate closest to name
// by edit distance (a transposition counting as one edit), when it is
// close enough to be a misspelling: at most a third of name's length
// away, and at least 1, 2 for names of 6 bytes or more. "" otherwise.
func didYouMean(name string, candidates []string) string {
	limit := max(1, len(name)/3)
	if len(name) >= 6 {
		limit = max(limit, 2)
	}
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(name), strings.ToLower(c)); d < bestD && c != name {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the optimal string alignment distance of a and b, byte
// by byte (keys and metric names are ASCII).
func editDistance(a, b string) int {
	// d[i][j]: distance of a[:i] and b[:j]; three rows suffice.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// keysAt lists the keys a mapping at path takes ("" the top level,
// "nats.tls", "gates[0]", "analysis.checks.canary[1]"), from the yaml
// tags of the Config types; nil when path names no mapping of keys.
func keysAt(path string) []string {
	t := reflect.TypeOf(Config{})
	if path != "" {
		for _, seg := range strings.Split(path, ".") {
			name, _, _ := strings.Cut(seg, "[")
			switch t.Kind() {
			case reflect.Map:
				t = t.Elem() // name is a key of the map
			case reflect.Struct:
				f, ok := fieldOfKey(t, name)
				if !ok {
					return nil
				}
				t = f.Type
			default:
				return nil
			}
			for range strings.Count(seg, "[") {
				if t.Kind() != reflect.Slice {
					return nil
				}
				t = t.Elem()
			}
		}
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		if key := yamlKey(t.Field(i)); key != "" {
			keys = append(keys, key)
		}
	}
	return keys
}

func fieldOfKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); yamlKey(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlKey is the key of a struct field in YAML, "" for none.
func yamlKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	return name
}
