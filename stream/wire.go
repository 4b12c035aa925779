package stream

import (
	"bytes"
	"errors"
	"fmt"
)

// The server-to-client half of the core NATS protocol, framed in place:
// CoreSubscribe reads it itself instead of through nats.go, whose client
// allocates three objects per message and wakes the handler's goroutine
// for each one (see BENCHMARKS.md, tenth session).

type frameOp uint8

const (
	opMsg  frameOp = iota + 1 // MSG or HMSG
	opPing                    // PING: answer PONG
	opPong                    // PONG: answer to our PING
	opOK                      // +OK (verbose mode only; ignored)
	opErr                     // -ERR 'text'
	opInfo                    // INFO {json}
)

// frame is one protocol message. Its slices point into the read buffer.
type frame struct {
	op      frameOp
	subject []byte
	sid     uint64
	// hdr is the length of the NATS header block at the start of payload
	// (HMSG); 0 for MSG.
	hdr int
	// payload is the message (headers and body) for MSG/HMSG, the
	// argument for -ERR and INFO.
	payload []byte
}

// maxControlLine bounds a protocol line without its CRLF; INFO, the
// longest, lists cluster URLs and stays far below it.
const maxControlLine = 1 << 20

var errProtocol = errors.New("nats protocol")

func protocolErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errProtocol}, args...)...)
}

// nextFrame frames the first protocol message of b. It returns the frame
// and the bytes it took; n == 0 means b holds no whole frame yet, and need
// is then the length the frame needs when known (at least len(b)+1), so the
// caller can grow its buffer. Message payloads longer than maxPayload are
// an error, as is anything the server cannot have sent.
func nextFrame(b []byte, maxPayload int) (f frame, n, need int, err error) {
	eol := bytes.Index(b, crlf)
	if eol < 0 {
		// b may end with the CR of a line of maxControlLine bytes.
		if len(b) > maxControlLine+1 || len(b) == maxControlLine+1 && b[maxControlLine] != '\r' {
			return frame{}, 0, 0, protocolErr("control line longer than %d bytes", maxControlLine)
		}
		return frame{}, 0, len(b) + 1, nil
	}
	if eol > maxControlLine {
		// The same limit whether or not the CRLF came in the same read.
		return frame{}, 0, 0, protocolErr("control line longer than %d bytes", maxControlLine)
	}
	line := b[:eol]
	op, args, _ := bytes.Cut(line, []byte{' '})
	switch {
	case equalFoldASCII(op, "MSG"), equalFoldASCII(op, "HMSG"):
		f.op = opMsg
		headers := len(op) == 4
		var argv [5][]byte
		fields := splitFields(argv[:0], args)
		want := 3
		if headers {
			want = 4
		}
		if len(fields) != want && len(fields) != want+1 {
			return frame{}, 0, 0, protocolErr("%s with %d arguments", op, len(fields))
		}
		f.subject = fields[0]
		if f.sid, err = parseSize(fields[1], "sid"); err != nil {
			return frame{}, 0, 0, err
		}
		total, err := parseSize(fields[len(fields)-1], "size")
		if err != nil {
			return frame{}, 0, 0, err
		}
		if total > uint64(maxPayload) {
			return frame{}, 0, 0, protocolErr("message of %d bytes, more than the %d the server allows", total, maxPayload)
		}
		if headers {
			hdr, err := parseSize(fields[len(fields)-2], "header size")
			if err != nil {
				return frame{}, 0, 0, err
			}
			if hdr > total {
				return frame{}, 0, 0, protocolErr("header of %d bytes in a message of %d", hdr, total)
			}
			f.hdr = int(hdr)
		}
		end := eol + 2 + int(total) + 2
		if len(b) < end {
			return frame{}, 0, end, nil
		}
		if b[end-2] != '\r' || b[end-1] != '\n' {
			return frame{}, 0, 0, protocolErr("message of %d bytes not followed by CRLF", total)
		}
		f.payload = b[eol+2 : end-2]
		return f, end, 0, nil
	case equalFoldASCII(op, "PING") && len(args) == 0:
		f.op = opPing
	case equalFoldASCII(op, "PONG") && len(args) == 0:
		f.op = opPong
	case equalFoldASCII(op, "+OK") && len(args) == 0:
		f.op = opOK
	case equalFoldASCII(op, "-ERR"):
		f.op = opErr
		f.payload = bytes.Trim(bytes.TrimSpace(args), "'")
	case equalFoldASCII(op, "INFO"):
		f.op = opInfo
		f.payload = bytes.TrimSpace(args)
	default:
		return frame{}, 0, 0, protocolErr("unexpected %.40q", line)
	}
	return f, eol + 2, 0, nil
}

var crlf = []byte("\r\n")

// splitFields appends the space- or tab-separated fields of b to dst, up to
// cap(dst)+1 of them (one more than allowed, so too many is seen) without
// allocating.
func splitFields(dst [][]byte, b []byte) [][]byte {
	start := -1
	for i, c := range b {
		if c == ' ' || c == '\t' {
			if start >= 0 {
				if len(dst) == cap(dst) {
					return append(dst[:len(dst):len(dst)], b[start:i])
				}
				dst = append(dst, b[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		dst = append(dst, b[start:])
	}
	return dst
}

// parseSize reads a decimal count of at most 18 digits.
func parseSize(b []byte, what string) (uint64, error) {
	if len(b) == 0 || len(b) > 18 {
		return 0, protocolErr("bad %s %.20q", what, b)
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, protocolErr("bad %s %.20q", what, b)
		}
		n = n*10 + uint64(c-'0')
	}
	return n, nil
}

func equalFoldASCII(b []byte, upper string) bool {
	if len(b) != len(upper) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}
