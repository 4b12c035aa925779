package sidecar_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/shadoweval/shadoweval/sidecar"
	"github.com/shadoweval/shadoweval/testenv"
)

// TestEmbeddedNATSPortBusy: the embedded server asked for a port another
// server holds (run asks for 4222) starts on a free one, and the log says
// where publishers must go.
func TestEmbeddedNATSPortBusy(t *testing.T) {
	t.Parallel()
	busy := testenv.RunBasic(t).Addr().(*net.TCPAddr).Port
	logs := &syncBuffer{}
	h := startApp(t, appOptions{embedded: true, goldFile: "testdata/gold_v1.jsonl", logs: logs,
		options: func(o *sidecar.Options) { o.EmbeddedNATSPort = busy }})
	url := h.Sidecar.NATSURL()
	if strings.HasSuffix(url, ":"+strconv.Itoa(busy)) {
		t.Fatalf("the sidecar is on the busy port: %s", url)
	}
	want := "port " + strconv.Itoa(busy) + " is in use: the embedded NATS server listens on " + url + "; publish there, e.g. shadoweval replay FILE --nats-url " + url
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, logs.String())
	}
	h.PublishJSON("rag.trace.live", goodTrace("A1"))
	h.waitEvents("live", map[string]int64{"scored": 1})
}
