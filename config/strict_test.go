package config

import (
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestStrictEveryScalarField: every integer, number and boolean field of
// the configuration, at any depth (in sections, gates and check sets),
// refuses a value yaml.v3 alone would read loosely, with its key path. A
// field added to a section is covered without any list to extend.
func TestStrictEveryScalarField(t *testing.T) {
	// What yaml.v3 reads loosely into each kind of Go value; Duration
	// reads itself.
	loose := func(t reflect.Type) string {
		if t == reflect.TypeFor[Duration]() {
			return ""
		}
		switch t.Kind() {
		case reflect.Int:
			return "1.5"
		case reflect.Float64:
			return ".nan"
		case reflect.Bool:
			return "yes"
		}
		return ""
	}
	var fields int
	var walk func(typ reflect.Type, path string, wrap func(any) any)
	walk = func(typ reflect.Type, path string, wrap func(any) any) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if key == "" || key == "-" {
				continue
			}
			p := joinPath(path, key)
			at := func(v any) any { return wrap(map[string]any{key: v}) }
			switch ft := f.Type; {
			case loose(ft) != "":
				fields++
				checkLoose(t, p, at(&yaml.Node{Kind: yaml.ScalarNode, Value: loose(ft)}))
			case ft.Kind() == reflect.Struct:
				walk(ft, p, at)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), p+"[0]", func(v any) any { return at([]any{v}) })
			case ft.Kind() == reflect.Slice && loose(ft.Elem()) != "":
				fields++
				checkLoose(t, p+"[0]", at([]any{&yaml.Node{Kind: yaml.ScalarNode, Value: loose(ft.Elem())}}))
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Slice:
				walk(ft.Elem().Elem(), p+".custom[0]", func(v any) any { return at(map[string]any{"custom": []any{v}}) })
			}
		}
	}
	walk(reflect.TypeFor[Config](), "", func(v any) any { return v })
	if fields < 20 {
		t.Fatalf("only %d scalar fields found", fields)
	}
}

func checkLoose(t *testing.T, path string, doc any) {
	t.Helper()
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse(data, "config.yaml")
	if want := path + ": want "; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: Parse(%q) = %v, want a problem %q", path, data, err, want)
	}
}
