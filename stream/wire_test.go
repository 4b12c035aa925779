package stream

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// wantFrame is a frame with its slices copied, for comparisons.
type wantFrame struct {
	op      frameOp
	subject string
	sid     uint64
	hdr     int
	payload string
}

func frameOf(f frame) wantFrame {
	return wantFrame{op: f.op, subject: string(f.subject), sid: f.sid, hdr: f.hdr, payload: string(f.payload)}
}

const wireMaxPayload = 1 << 20

// wireFrames are single valid frames, each exactly one frame long.
var wireFrames = []struct {
	name string
	in   string
	max  int // maxPayload; 0 means wireMaxPayload
	want wantFrame
}{
	{name: "MSG", in: "MSG rag.trace.live 1 5\r\nhello\r\n", want: wantFrame{opMsg, "rag.trace.live", 1, 0, "hello"}},
	{name: "MSG reply", in: "MSG rag.trace.live 12 _INBOX.abc.def 5\r\nhello\r\n", want: wantFrame{opMsg, "rag.trace.live", 12, 0, "hello"}},
	{name: "HMSG", in: "HMSG rag.answer.x 3 18 23\r\nNATS/1.0\r\nk: v\r\n\r\nhello\r\n", want: wantFrame{opMsg, "rag.answer.x", 3, 18, "NATS/1.0\r\nk: v\r\n\r\nhello"}},
	{name: "HMSG reply", in: "HMSG rag.answer.x 4 reply.to 12 17\r\nNATS/1.0\r\n\r\nhello\r\n", want: wantFrame{opMsg, "rag.answer.x", 4, 12, "NATS/1.0\r\n\r\nhello"}},
	{name: "HMSG headers only", in: "HMSG h 1 12 12\r\nNATS/1.0\r\n\r\n\r\n", want: wantFrame{opMsg, "h", 1, 12, "NATS/1.0\r\n\r\n"}},
	{name: "MSG empty", in: "MSG foo 1 0\r\n\r\n", want: wantFrame{opMsg, "foo", 1, 0, ""}},
	{name: "MSG empty reply", in: "MSG foo 2 r 0\r\n\r\n", want: wantFrame{opMsg, "foo", 2, 0, ""}},
	{name: "HMSG empty", in: "HMSG foo 1 0 0\r\n\r\n", want: wantFrame{opMsg, "foo", 1, 0, ""}},
	{name: "MSG payload with CRLF", in: "MSG foo 1 14\r\n\r\nPING\r\nMSG \r\n\r\n", want: wantFrame{opMsg, "foo", 1, 0, "\r\nPING\r\nMSG \r\n"}},
	{name: "MSG extra blanks", in: "MSG  foo\t7 \t 5\r\nhello\r\n", want: wantFrame{opMsg, "foo", 7, 0, "hello"}},
	{name: "MSG at maxPayload", in: "MSG foo 1 5\r\nhello\r\n", max: 5, want: wantFrame{opMsg, "foo", 1, 0, "hello"}},
	{name: "MSG empty at maxPayload 0", in: "MSG foo 1 0\r\n\r\n", max: -1, want: wantFrame{opMsg, "foo", 1, 0, ""}},
	{name: "MSG 18-digit sid", in: "MSG foo 999999999999999999 1\r\nx\r\n", want: wantFrame{opMsg, "foo", 999999999999999999, 0, "x"}},
	{name: "MSG leading zeros", in: "MSG foo 0001 005\r\nhello\r\n", want: wantFrame{opMsg, "foo", 1, 0, "hello"}},
	{name: "msg", in: "msg foo 1 2\r\nhi\r\n", want: wantFrame{opMsg, "foo", 1, 0, "hi"}},
	{name: "Msg", in: "Msg foo 1 2\r\nhi\r\n", want: wantFrame{opMsg, "foo", 1, 0, "hi"}},
	{name: "hmsg", in: "hmsg foo 1 r 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", want: wantFrame{opMsg, "foo", 1, 12, "NATS/1.0\r\n\r\nhi"}},
	{name: "PING", in: "PING\r\n", want: wantFrame{op: opPing}},
	{name: "ping", in: "ping\r\n", want: wantFrame{op: opPing}},
	{name: "PONG", in: "PONG\r\n", want: wantFrame{op: opPong}},
	{name: "pong", in: "pong\r\n", want: wantFrame{op: opPong}},
	{name: "+OK", in: "+OK\r\n", want: wantFrame{op: opOK}},
	{name: "+ok", in: "+ok\r\n", want: wantFrame{op: opOK}},
	{name: "-ERR", in: "-ERR 'Authorization Violation'\r\n", want: wantFrame{op: opErr, payload: "Authorization Violation"}},
	{name: "-err", in: "-err 'Slow Consumer'\r\n", want: wantFrame{op: opErr, payload: "Slow Consumer"}},
	{name: "-ERR bare", in: "-ERR\r\n", want: wantFrame{op: opErr}},
	{name: "INFO", in: "INFO {\"server_id\":\"x\",\"max_payload\":1048576}\r\n", want: wantFrame{op: opInfo, payload: `{"server_id":"x","max_payload":1048576}`}},
	{name: "info", in: "info  {\"ldm\":true} \r\n", want: wantFrame{op: opInfo, payload: `{"ldm":true}`}},
}

func effectiveMax(m int) int {
	switch {
	case m == 0:
		return wireMaxPayload
	case m < 0:
		return 0
	}
	return m
}

// within reports whether s lies inside b (same backing array).
func within(s, b []byte) bool {
	if len(s) == 0 {
		return true
	}
	for i := 0; i+len(s) <= len(b); i++ {
		if &b[i] == &s[0] {
			return true
		}
	}
	return false
}

func TestNextFrame(t *testing.T) {
	for _, tc := range wireFrames {
		t.Run(tc.name, func(t *testing.T) {
			maxPayload := effectiveMax(tc.max)
			// Alone, and followed by the start of another frame.
			for _, tail := range []string{"", "PING\r\n", "MSG x 1 3\r\nab"} {
				b := []byte(tc.in + tail)
				f, n, need, err := nextFrame(b, maxPayload)
				if err != nil {
					t.Fatalf("tail %q: %v", tail, err)
				}
				if n != len(tc.in) || need != 0 {
					t.Fatalf("tail %q: n=%d need=%d, want n=%d", tail, n, need, len(tc.in))
				}
				if got := frameOf(f); got != tc.want {
					t.Fatalf("tail %q: got %+v, want %+v", tail, got, tc.want)
				}
				if !within(f.subject, b[:n]) || !within(f.payload, b[:n]) {
					t.Fatalf("tail %q: frame slices outside the input", tail)
				}
				checkNextFrame(t, b, maxPayload)
			}
		})
	}
}

// TestNextFramePrefixes: every proper prefix of a valid frame is
// incomplete, with need beyond the prefix and not beyond the frame; need is
// the frame's length once a MSG/HMSG line is complete.
func TestNextFramePrefixes(t *testing.T) {
	for _, tc := range wireFrames {
		maxPayload := effectiveMax(tc.max)
		lineEnd := strings.Index(tc.in, "\r\n") + 2
		for i := range len(tc.in) {
			_, n, need, err := nextFrame([]byte(tc.in[:i]), maxPayload)
			if err != nil || n != 0 {
				t.Fatalf("%s: prefix %q: n=%d err=%v, want incomplete", tc.name, tc.in[:i], n, err)
			}
			if need <= i || need > len(tc.in) {
				t.Fatalf("%s: prefix of %d bytes: need %d, want in (%d, %d]", tc.name, i, need, i, len(tc.in))
			}
			if tc.want.op == opMsg && i >= lineEnd && need != len(tc.in) {
				t.Fatalf("%s: prefix of %d bytes (line complete): need %d, want %d", tc.name, i, need, len(tc.in))
			}
		}
	}
}

func TestNextFrameIncomplete(t *testing.T) {
	for _, tc := range []struct {
		in   string
		need int
	}{
		{"", 1},
		{"P", 2},
		{"PING\r", 6},
		{"MSG foo 1 5", 12},
		{"MSG foo 1 5\r\n", 20},
		{"MSG foo 1 5\r\nhel", 20},
		{"MSG foo 1 5\r\nhello\r", 20},
		{"HMSG foo 1 12 17\r\nNATS", 37},
		{strings.Repeat("I", maxControlLine), maxControlLine + 1},
	} {
		f, n, need, err := nextFrame([]byte(tc.in), wireMaxPayload)
		if err != nil || n != 0 || need != tc.need || f.op != 0 {
			t.Errorf("%.40q: n=%d need=%d err=%v op=%d, want incomplete needing %d", tc.in, n, need, err, f.op, tc.need)
		}
	}
}

func TestNextFrameErrors(t *testing.T) {
	longLine := strings.Repeat("x", maxControlLine+1)
	for _, tc := range []struct {
		name string
		in   string
		max  int
	}{
		{name: "no CRLF after payload", in: "MSG foo 1 5\r\nhelloXY"},
		{name: "LF CR after payload", in: "MSG foo 1 5\r\nhello\n\r"},
		{name: "CR CR after payload", in: "MSG foo 1 5\r\nhello\r\r"},
		{name: "payload shorter than its size", in: "MSG foo 1 5\r\nhi\r\nPING\r\n"},
		{name: "HMSG no CRLF after payload", in: "HMSG foo 1 12 12\r\nNATS/1.0\r\n\r\nxx"},
		{name: "MSG no args", in: "MSG\r\n"},
		{name: "MSG blank args", in: "MSG  \t \r\n"},
		{name: "MSG one arg", in: "MSG foo\r\n"},
		{name: "MSG two args", in: "MSG foo 1\r\n"},
		{name: "MSG five args", in: "MSG foo 1 a b 5\r\n"},
		{name: "MSG many args", in: "MSG a b c d e f g h 5\r\n"},
		{name: "HMSG three args", in: "HMSG foo 1 5\r\n"},
		{name: "HMSG six args", in: "HMSG foo 1 a 2 5 6\r\n"},
		{name: "HMSG many args", in: "HMSG foo 1 a b c d e 5\r\n"},
		{name: "size with letter", in: "MSG foo 1 5x\r\n"},
		{name: "negative size", in: "MSG foo 1 -1\r\n"},
		{name: "signed size", in: "MSG foo 1 +1\r\n"},
		{name: "hex size", in: "MSG foo 1 0x5\r\n"},
		{name: "non-ASCII digit", in: "MSG foo 1 \uff15\r\n"},
		{name: "sid with letter", in: "MSG foo x 5\r\n"},
		{name: "19-digit size", in: "MSG foo 1 1234567890123456789\r\n", max: math.MaxInt},
		{name: "19-digit zero size", in: "MSG foo 1 0000000000000000000\r\n\r\n"},
		{name: "19-digit sid", in: "MSG foo 1234567890123456789 1\r\nx\r\n"},
		{name: "HMSG header size with letter", in: "HMSG foo 1 x 5\r\n"},
		{name: "HMSG 19-digit header size", in: "HMSG foo 1 1234567890123456789 5\r\n"},
		{name: "HMSG header larger than message", in: "HMSG foo 1 6 5\r\nhello\r\n"},
		{name: "over maxPayload", in: "MSG foo 1 6\r\n", max: 5},
		{name: "over maxPayload with payload", in: "MSG foo 1 6\r\nhello!\r\n", max: 5},
		{name: "HMSG over maxPayload", in: "HMSG foo 1 2 6\r\n", max: 5},
		{name: "over maxPayload 0", in: "MSG foo 1 1\r\n", max: -1},
		{name: "18-digit size", in: "MSG foo 1 999999999999999999\r\n"},
		{name: "empty line", in: "\r\n"},
		{name: "unknown op", in: "FOO\r\n"},
		{name: "client op", in: "PUB foo 5\r\nhello\r\n"},
		{name: "MSG prefix op", in: "MSGX foo 1 5\r\n"},
		{name: "PING with argument", in: "PING x\r\n"},
		{name: "PONG with argument", in: "PONG 1\r\n"},
		{name: "+OK with argument", in: "+OK x\r\n"},
		{name: "leading blank", in: " PING\r\n"},
		{name: "LF only line", in: "PING\nPONG\r\n"},
		{name: "control line over maxControlLine", in: longLine},
		{name: "INFO over maxControlLine", in: "INFO {" + longLine},
	} {
		maxPayload := effectiveMax(tc.max)
		f, n, need, err := nextFrame([]byte(tc.in), maxPayload)
		if err == nil || n != 0 {
			t.Errorf("%s: %.60q: n=%d need=%d err=%v frame %+v, want an error", tc.name, tc.in, n, need, err, frameOf(f))
			continue
		}
		if !errors.Is(err, errProtocol) {
			t.Errorf("%s: error %v is not errProtocol", tc.name, err)
		}
		if len(err.Error()) > 200 {
			t.Errorf("%s: error of %d bytes quotes too much of the input", tc.name, len(err.Error()))
		}
	}
}

// TestNextFrameControlLineLimit: maxControlLine bounds a control line
// without its CRLF, whatever pieces the line arrives in. A line of exactly
// maxControlLine bytes is fine, even when the buffer ends between its CR
// and LF; one byte more is refused, even when its CRLF is already in the
// buffer (readLine, which reads the handshake, refuses it too).
func TestNextFrameControlLineLimit(t *testing.T) {
	line := "INFO {" + strings.Repeat("x", maxControlLine-7) + "}"
	if len(line) != maxControlLine {
		t.Fatalf("line of %d bytes", len(line))
	}
	whole := line + "\r\n"
	for i := len(line) - 1; i < len(whole); i++ {
		_, n, need, err := nextFrame([]byte(whole[:i]), wireMaxPayload)
		if err != nil || n != 0 || need <= i {
			t.Errorf("line of maxControlLine bytes, first %d bytes: n=%d need=%d err=%v, want incomplete", i, n, need, err)
		}
	}
	if f, n, _, err := nextFrame([]byte(whole), wireMaxPayload); err != nil || n != len(whole) || f.op != opInfo {
		t.Errorf("line of maxControlLine bytes: op %d n=%d err=%v, want INFO", f.op, n, err)
	}

	long := "INFO {" + strings.Repeat("x", maxControlLine-6) + "}"
	for _, in := range []string{long, long + "\r", long + "\r\n", long + "\r\nPING\r\n"} {
		if _, n, _, err := nextFrame([]byte(in), wireMaxPayload); err == nil {
			t.Errorf("line of maxControlLine+1 bytes, %d bytes in the buffer: n=%d, want an error", len(in), n)
		}
	}
}

// wireStream makes count random frames (every op, both cases, replies,
// headers, empty payloads and payloads that look like frames) and the
// frames nextFrame must find in them.
func wireStream(r *rand.Rand, count int) ([]byte, []wantFrame) {
	var b []byte
	var want []wantFrame
	randText := func(n int) string {
		const alphabet = "abcXYZ019 .\r\n\t'{}\"MSGPING"
		s := make([]byte, n)
		for i := range s {
			s[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(s)
	}
	caseOf := func(op string) string {
		if r.IntN(4) == 0 {
			return strings.ToLower(op)
		}
		return op
	}
	subjects := []string{"rag.trace.live", "rag.answer.canary", "x", "rag.judgement.shadow.a.b.c"}
	for range count {
		switch k := r.IntN(10); {
		case k < 6: // MSG or HMSG
			subject := subjects[r.IntN(len(subjects))]
			sid := uint64(r.IntN(5) + 1)
			var body string
			switch r.IntN(4) {
			case 0:
			case 1:
				body = "MSG x 1 3\r\nabc\r\n"
			default:
				body = randText(r.IntN(300))
			}
			reply := ""
			if r.IntN(3) == 0 {
				reply = " _INBOX." + fmt.Sprint(r.IntN(1000))
			}
			if k < 3 {
				b = fmt.Appendf(b, "%s %s %d%s %d\r\n%s\r\n", caseOf("MSG"), subject, sid, reply, len(body), body)
				want = append(want, wantFrame{opMsg, subject, sid, 0, body})
			} else {
				hdr := "NATS/1.0\r\ntraceparent: 00-" + strings.Repeat("ab", r.IntN(20)) + "\r\n\r\n"
				b = fmt.Appendf(b, "%s %s %d%s %d %d\r\n%s%s\r\n", caseOf("HMSG"), subject, sid, reply, len(hdr), len(hdr)+len(body), hdr, body)
				want = append(want, wantFrame{opMsg, subject, sid, len(hdr), hdr + body})
			}
		case k == 6:
			b = append(b, caseOf("PING")+"\r\n"...)
			want = append(want, wantFrame{op: opPing})
		case k == 7:
			b = append(b, caseOf("PONG")+"\r\n"...)
			want = append(want, wantFrame{op: opPong})
		case k == 8:
			if r.IntN(2) == 0 {
				b = append(b, caseOf("+OK")+"\r\n"...)
				want = append(want, wantFrame{op: opOK})
			} else {
				b = append(b, caseOf("-ERR")+" 'Permissions Violation for Subscription to x'\r\n"...)
				want = append(want, wantFrame{op: opErr, payload: "Permissions Violation for Subscription to x"})
			}
		default:
			info := fmt.Sprintf(`{"server_id":"%d","max_payload":1048576,"connect_urls":["127.0.0.1:%d"]}`, r.IntN(100), r.IntN(65536))
			b = append(b, caseOf("INFO")+" "+info+"\r\n"...)
			want = append(want, wantFrame{op: opInfo, payload: info})
		}
	}
	return b, want
}

// feedFrames gives stream to nextFrame in the pieces cut at cuts (in
// increasing order), as a reader appending to its buffer would, and returns
// the frames found. It checks need on the way: beyond the buffered bytes,
// never beyond the frame, and the frame's length once promised.
func feedFrames(t *testing.T, stream []byte, cuts []int) []wantFrame {
	t.Helper()
	var buf []byte
	var got []wantFrame
	prev := 0
	promised, maxNeed := 0, 0
	for _, cut := range append(cuts, len(stream)) {
		buf = append(buf, stream[prev:cut]...)
		prev = cut
		for {
			f, n, need, err := nextFrame(buf, wireMaxPayload)
			if err != nil {
				t.Fatalf("after %d bytes: %v", cut, err)
			}
			if n == 0 {
				if need <= len(buf) {
					t.Fatalf("after %d bytes: incomplete with need %d for %d buffered", cut, need, len(buf))
				}
				if need > len(buf)+1 {
					// A MSG line is complete: the frame's length is known.
					if promised != 0 && promised != need {
						t.Fatalf("after %d bytes: need %d, was %d", cut, need, promised)
					}
					promised = need
				}
				maxNeed = max(maxNeed, need)
				break
			}
			if promised != 0 && n != promised {
				t.Fatalf("frame %d: %d bytes, need said %d", len(got), n, promised)
			}
			if maxNeed > n {
				t.Fatalf("frame %d: %d bytes, need said %d", len(got), n, maxNeed)
			}
			promised, maxNeed = 0, 0
			got = append(got, frameOf(f))
			buf = buf[n:]
		}
	}
	if len(buf) != 0 {
		t.Fatalf("%d bytes left over: %.40q", len(buf), buf)
	}
	return got
}

func equalFrames(t *testing.T, what string, got, want []wantFrame) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d frames, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: frame %d: got %+v, want %+v", what, i, got[i], want[i])
		}
	}
}

// TestNextFrameSplits: a stream of many frames gives the same frames in one
// piece, in random pieces, a byte at a time and cut in two at every point.
func TestNextFrameSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	stream, want := wireStream(r, 500)
	equalFrames(t, "whole", feedFrames(t, stream, nil), want)

	for trial := range 50 {
		var cuts []int
		for at := r.IntN(64); at < len(stream); at += 1 + r.IntN([]int{8, 64, 600, 5000}[trial%4]) {
			cuts = append(cuts, at)
		}
		equalFrames(t, fmt.Sprintf("trial %d", trial), feedFrames(t, stream, cuts), want)
	}

	small, smallWant := wireStream(r, 40)
	every := make([]int, len(small))
	for i := range every {
		every[i] = i
	}
	equalFrames(t, "byte at a time", feedFrames(t, small, every), smallWant)
	for cut := range len(small) + 1 {
		equalFrames(t, fmt.Sprintf("cut at %d", cut), feedFrames(t, small, []int{cut}), smallWant)
	}
}

// benchBody is a trace event as the sidecar receives them.
const benchBody = `{"qid":"A0001","q":"Does X support null keys?","retrieved_ids":["p1#1","p1#2","p2#1"],"answer_json":{"claim":"X rejects null keys.","citations":["p1#2"]},"ts":"2024-05-01T12:00:00.000Z","arm":"live","model":"m-1","latency_ms":123}`

const benchHeader = "NATS/1.0\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nNats-Msg-Id: A0001-live\r\n\r\n"

var benchFrames = []struct{ name, in string }{
	{"MSG", fmt.Sprintf("MSG rag.trace.live 1 %d\r\n%s\r\n", len(benchBody), benchBody)},
	{"HMSG", fmt.Sprintf("HMSG rag.trace.live 1 _INBOX.abc %d %d\r\n%s%s\r\n", len(benchHeader), len(benchHeader)+len(benchBody), benchHeader, benchBody)},
	{"PING", "PING\r\n"},
}

// TestNextFrameNoAllocs: framing a message allocates nothing (the
// benchmark's claim, enforced).
func TestNextFrameNoAllocs(t *testing.T) {
	for _, bf := range benchFrames {
		b := []byte(bf.in)
		allocs := testing.AllocsPerRun(100, func() {
			if _, n, _, err := nextFrame(b, wireMaxPayload); err != nil || n != len(b) {
				t.Fatalf("%s: n=%d err=%v", bf.name, n, err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per frame", bf.name, allocs)
		}
	}
}

var benchSink int

func BenchmarkNextFrame(b *testing.B) {
	for _, bf := range benchFrames {
		b.Run(bf.name, func(b *testing.B) {
			buf := []byte(bf.in)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				f, n, _, err := nextFrame(buf, wireMaxPayload)
				if err != nil || n != len(buf) {
					b.Fatalf("n=%d err=%v", n, err)
				}
				benchSink += len(f.payload) + f.hdr
			}
		})
	}
	b.Run("stream", func(b *testing.B) {
		stream, want := wireStream(rand.New(rand.NewPCG(3, 4)), 1000)
		b.SetBytes(int64(len(stream)))
		b.ReportAllocs()
		for b.Loop() {
			frames := 0
			for p := 0; p < len(stream); frames++ {
				_, n, _, err := nextFrame(stream[p:], wireMaxPayload)
				if err != nil || n == 0 {
					b.Fatalf("at %d: n=%d err=%v", p, n, err)
				}
				p += n
			}
			if frames != len(want) {
				b.Fatalf("%d frames, want %d", frames, len(want))
			}
		}
	})
}

// checkNextFrame checks nextFrame's invariants on b.
func checkNextFrame(t *testing.T, b []byte, maxPayload int) {
	t.Helper()
	f, n, need, err := nextFrame(b, maxPayload)
	if n < 0 || n > len(b) {
		t.Fatalf("n=%d for %d bytes", n, len(b))
	}
	if err != nil {
		if n != 0 {
			t.Fatalf("n=%d with error %v", n, err)
		}
		if !errors.Is(err, errProtocol) {
			t.Fatalf("error %v is not errProtocol", err)
		}
		return
	}
	if n == 0 {
		if need <= len(b) {
			t.Fatalf("incomplete with need %d for %d bytes", need, len(b))
		}
		if f.op != 0 {
			t.Fatalf("incomplete with op %d", f.op)
		}
		return
	}
	frameBytes := b[:n]
	if !bytes.HasSuffix(frameBytes, crlf) {
		t.Fatalf("frame %q does not end with CRLF", frameBytes)
	}
	if f.op < opMsg || f.op > opInfo {
		t.Fatalf("op %d", f.op)
	}
	if !within(f.subject, frameBytes) || !within(f.payload, frameBytes) {
		t.Fatalf("frame slices outside b[:n]")
	}
	eol := bytes.Index(b, crlf)
	if f.op == opMsg {
		if f.hdr < 0 || f.hdr > len(f.payload) || len(f.payload) > maxPayload {
			t.Fatalf("hdr %d, payload %d bytes, maxPayload %d", f.hdr, len(f.payload), maxPayload)
		}
		if len(f.subject) == 0 {
			t.Fatalf("MSG without subject")
		}
		if n != eol+2+len(f.payload)+2 {
			t.Fatalf("MSG of %d bytes, line %d, payload %d", n, eol, len(f.payload))
		}
	} else if n != eol+2 || f.subject != nil || f.sid != 0 || f.hdr != 0 {
		t.Fatalf("control frame of %d bytes, line ends at %d: %+v", n, eol, frameOf(f))
	}
	// The frame alone, in place, and a copy followed by more.
	f2, n2, _, err2 := nextFrame(b[:n:n], maxPayload)
	if err2 != nil || n2 != n || frameOf(f2) != frameOf(f) || !bytes.Equal(f2.subject, f.subject) || !bytes.Equal(f2.payload, f.payload) {
		t.Fatalf("b[:n] alone: %+v n=%d err=%v, want %+v n=%d", frameOf(f2), n2, err2, frameOf(f), n)
	}
	if len(f2.payload) > 0 && &f2.payload[0] != &f.payload[0] {
		t.Fatalf("b[:n] alone: payload moved")
	}
	c := append(bytes.Clone(frameBytes), "MSG x 1 3\r\n"...)
	f3, n3, _, err3 := nextFrame(c, maxPayload)
	if err3 != nil || n3 != n || frameOf(f3) != frameOf(f) {
		t.Fatalf("copy followed by more: %+v n=%d err=%v, want %+v n=%d", frameOf(f3), n3, err3, frameOf(f), n)
	}
	// Prefixes of the frame are incomplete, needing no more than the frame;
	// the frame's length once the whole line is there.
	if n <= maxControlLine {
		prefixes := []int{0, n / 2, n - 1}
		if f.op == opMsg {
			prefixes = append(prefixes, eol+2)
		}
		for _, i := range prefixes {
			if i >= n {
				continue
			}
			_, pn, pneed, perr := nextFrame(b[:i:i], maxPayload)
			if perr != nil || pn != 0 || pneed <= i || pneed > n {
				t.Fatalf("prefix of %d of a %d-byte frame: n=%d need=%d err=%v", i, n, pn, pneed, perr)
			}
			if i >= eol+2 && pneed != n {
				t.Fatalf("prefix of %d of a %d-byte frame, line complete: need %d", i, n, pneed)
			}
		}
	}
}

func FuzzNextFrame(f *testing.F) {
	for _, tc := range wireFrames {
		f.Add([]byte(tc.in), uint32(effectiveMax(tc.max)))
	}
	stream, _ := wireStream(rand.New(rand.NewPCG(5, 6)), 8)
	f.Add(stream, uint32(wireMaxPayload))
	f.Add([]byte("MSG foo 1 5\r\nhel"), uint32(wireMaxPayload))
	f.Add([]byte("HMSG foo 1 6 5\r\nhello\r\n"), uint32(wireMaxPayload))
	f.Fuzz(func(t *testing.T, b []byte, maxPayload uint32) {
		checkNextFrame(t, b, int(maxPayload))
	})
}
