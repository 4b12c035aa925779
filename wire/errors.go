// Package wire holds the events of SPEC §2 (gold items, trace events,
// judgements) as they are written: their kinds, decoding and validation,
// the joining of split events, and reading of JSONL files. Errors name the
// file, line and field at fault. It knows nothing of NATS: the live
// sidecar, the offline commands and the per-event checks share it.
package wire

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// FieldError is a decoding or validation failure inside one JSON value.
// Field is a dotted path ("answer_json.citations.0"), empty for the value as
// a whole.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return fmt.Sprintf("field %s: %s", e.Field, e.Msg)
}

// LineError places an error at a line of a file.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// asFieldError turns the errors of the JSON library into a FieldError whose
// field is the dotted form of the JSON pointer it reports.
func asFieldError(err error) *FieldError {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe
	}
	var se *json.SemanticError
	if errors.As(err, &se) {
		msg := "want " + goKind(se.GoType)
		if k := se.JSONKind; k != 0 && k != ']' && k != '}' {
			msg += ", got " + KindName(k)
		}
		if se.Err != nil {
			msg += ": " + se.Err.Error()
		}
		return &FieldError{Field: dotted(se.JSONPointer), Msg: msg}
	}
	var syn *jsontext.SyntacticError
	if errors.As(err, &syn) {
		return &FieldError{Field: dotted(syn.JSONPointer), Msg: fmt.Sprintf("invalid JSON at byte %d: %v", syn.ByteOffset, syn.Err)}
	}
	return &FieldError{Msg: err.Error()}
}

// ownPackage is this package's import path: its wire structs are JSON
// objects to the user, whatever the Go names.
var ownPackage = reflect.TypeFor[FieldError]().PkgPath()

func goKind(typ reflect.Type) string {
	t := typ.String()
	elem := typ
	if elem.Kind() == reflect.Pointer {
		elem = elem.Elem()
	}
	switch {
	case strings.HasPrefix(t, "[2]") || strings.HasPrefix(t, "*[2]"):
		return "a [start,end] pair"
	case t == "string" || t == "*string":
		return "a string"
	case t == "bool" || t == "*bool":
		return "a bool"
	case strings.Contains(t, "int"):
		return "an integer"
	case strings.Contains(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "map["), elem.Kind() == reflect.Struct && elem.PkgPath() == ownPackage:
		return "an object"
	}
	return t
}

// KindName names the kind of a JSON value in an error message: "a
// string", "an array", "null".
func KindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return "invalid JSON"
}

// dotted turns "/answer_json/citations/0" into "answer_json.citations.0".
func dotted(ptr jsontext.Pointer) string {
	s := strings.TrimPrefix(string(ptr), "/")
	s = strings.ReplaceAll(s, "/", ".")
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}

// unmarshal decodes one JSON value strictly: names are case-sensitive,
// duplicate names, invalid UTF-8 and out-of-range numbers are refused.
func unmarshal(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return asFieldError(err)
	}
	return nil
}
