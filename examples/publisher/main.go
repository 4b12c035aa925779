// Command publisher is a retriever's side of shadoweval: after answering a
// request it publishes one trace event on NATS, on rag.trace.<arm>.<key>,
// with the arm of the pod it runs in.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// event is a trace event (shadoweval's README: Formats by example).
type event struct {
	QID       string    `json:"qid"`
	RequestID string    `json:"request_id"`
	Arm       string    `json:"arm"`
	TS        time.Time `json:"ts"`
	Query     string    `json:"query"`
	TopK      []item    `json:"topk"`
	Answer    answer    `json:"answer_json"`
}

type item struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

type answer struct {
	Claim     string   `json:"claim"`
	Citations []string `json:"citations"`
}

// arm is the pod's arm, from its labels, which the Downward API writes to
// a file (LABELS_FILE, default /etc/podinfo/labels) and keeps up to date:
// Flagger's primary pods (app: <name>-primary) are live; otherwise the
// label arm says, which Argo Rollouts sets to canary or live on each pod
// (canaryMetadata, stableMetadata) and changes on promotion; live when
// there is none. Read it for each event (or every few seconds).
func arm() string {
	f, err := os.Open(cmp.Or(os.Getenv("LABELS_FILE"), "/etc/podinfo/labels"))
	if err != nil {
		return "live"
	}
	defer f.Close()
	labels := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if key, value, ok := strings.Cut(sc.Text(), "="); ok {
			if v, err := strconv.Unquote(value); err == nil {
				labels[key] = v
			}
		}
	}
	if strings.HasSuffix(labels["app"], "-primary") {
		return "live"
	}
	return cmp.Or(labels["arm"], "live")
}

// subject is rag.trace.<arm>.<key>. The key token keeps a question's
// events on one member of a scaled-out sidecar (cluster.partitions); a
// single sidecar takes it too. The key is the qid when it is a safe
// subject token, else h and the 16 hex digits of its FNV-1a 64-bit hash.
func subject(arm, qid string) string {
	key := qid
	if !safeToken(qid) {
		h := fnv.New64a()
		h.Write([]byte(qid))
		key = fmt.Sprintf("h%016x", h.Sum64())
	}
	return "rag.trace." + arm + "." + key
}

// safeToken: 1 to 64 ASCII letters, digits and -_:=+.
func safeToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-_:=+", c)) {
			return false
		}
	}
	return true
}

func main() {
	nc, err := nats.Connect(cmp.Or(os.Getenv("NATS_URL"), nats.DefaultURL), nats.Name("retriever"))
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()

	// What the retriever retrieved and answered for one request.
	ev := event{
		QID: "A0001", RequestID: "r-20931", Arm: arm(), TS: time.Now().UTC(),
		Query:  "Does X support null keys?",
		TopK:   []item{{ID: "p1#2", Score: 0.83}, {ID: "p1#1", Score: 0.61}},
		Answer: answer{Claim: "X rejects null keys.", Citations: []string{"p1#2"}},
	}
	data, err := json.Marshal(ev)
	if err != nil {
		log.Fatal(err)
	}
	if err := nc.Publish(subject(ev.Arm, ev.QID), data); err != nil {
		log.Fatal(err)
	}
	// A server publishing all day flushes on its way out (nc.Drain).
	if err := nc.Flush(); err != nil {
		log.Fatal(err)
	}
}
