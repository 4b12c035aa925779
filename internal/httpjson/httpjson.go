// Package httpjson writes the sidecar's JSON answers: encoding/json's
// output indented by two spaces, as on-call engineers read it with curl,
// without HTML escaping (ops such as ">=" stay readable), written by the
// json v2 encoder, which indents as it writes rather than in a second
// pass. A value JSON cannot hold answers 500 with the reason: a 200 with
// half a body, or none, would be read as an answer.
package httpjson

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

var format = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsontext.WithIndent("  "), jsontext.EscapeForHTML(false))

// buffers are kept between answers: controllers, the status page and
// Prometheus read often.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Write answers v with status, as application/json.
func Write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	buf := buffers.Get().(*bytes.Buffer)
	defer buffers.Put(buf)
	buf.Reset()
	if err := jsonv2.MarshalWrite(buf, v, format); err != nil {
		msg, _ := json.MarshalIndent(map[string]string{"error": "response not encodable: " + err.Error()}, "", "  ")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write(append(msg, '\n'))
		return
	}
	buf.WriteByte('\n')
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
