package sidecar

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
	"time"

	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/wire"
)

// Idempotency (SPEC §9): an event whose key was already applied inside the
// longest window is counted once, as outcome duplicate the second time.
//
// The key of an event is its kind, its arm and its event_id, else its
// Nats-Msg-Id header, else, for a JetStream message, its stream sequence
// (which catches redeliveries of messages that carry no id). Keys are kept
// by event time, in buckets of the longest window's resolution, for the
// longest window and one bucket more behind the clock, and forgotten
// after: an event that old is late anyway. So memory is bounded by the
// events of the longest window (about 40 bytes each: a 64-bit hash of the
// key and the stream sequence), whatever the input rate over time.
//
// Keys are stored as 64-bit hashes (maphash, seeded per process): two
// distinct keys collide with probability about n²/2⁶⁵ for n keys held, so
// 10⁷ keys give about one wrongly dropped event in 3·10⁵ runs of an hour.
type deduper struct {
	res   int64 // bucket width, ns
	keep  int64 // event time remembered behind the clock, ns
	ahead int64 // event time accepted ahead of the clock, ns
	seed  maphash.Seed

	mu      sync.Mutex
	seen    map[uint64]uint64  // key hash → stream sequence (0: core NATS)
	buckets map[int64][]uint64 // event-time bucket → key hashes
	floor   int64              // buckets below it are forgotten
}

type dedupeResult int

const (
	dedupeNew        dedupeResult = iota // first time: apply it
	dedupeDuplicate                      // the key was applied before: count a duplicate
	dedupeRedelivery                     // the same JetStream message again: applied already
)

func newDeduper(longest, res, maxLate time.Duration) *deduper {
	return &deduper{
		res: int64(res), keep: int64(longest + res), ahead: int64(maxLate),
		seed:    maphash.MakeSeed(),
		seen:    make(map[uint64]uint64),
		buckets: make(map[int64][]uint64),
	}
}

// message applies the rule to a decoded, valid message of arm with event
// time t: its key is eventID, else its Nats-Msg-Id header, else its
// stream sequence; a core NATS message with neither id has none.
func (d *deduper) message(m *stream.Message, arm, eventID string, t time.Time) dedupeResult {
	id := eventID
	if id == "" && m.Header != nil {
		id = stream.MsgID(m.Header)
	}
	if id == "" && m.Seq == 0 {
		return dedupeNew // nothing to go by
	}
	return d.check(m.Kind, arm, id, m.Seq, t, m.Received)
}

// check looks the key up and records it when new. seq is the stream
// sequence (0: core NATS); with id "" the key is the sequence itself. t
// is the event time and now the message's clock. An event time beyond
// what the windows accept is never recorded: such an event is late or
// rejected, and a flood of them cannot grow the set.
func (d *deduper) check(kind wire.Kind, arm, id string, seq uint64, t, now time.Time) dedupeResult {
	var h maphash.Hash
	h.SetSeed(d.seed)
	h.WriteByte(byte(kind))
	h.WriteString(arm)
	if id != "" {
		h.WriteByte('i')
		h.WriteString(id)
	} else {
		var b [9]byte
		b[0] = 's'
		binary.LittleEndian.PutUint64(b[1:], seq)
		h.Write(b[:])
	}
	key := h.Sum64()
	tn, nn := t.UnixNano(), now.UnixNano()

	d.mu.Lock()
	defer d.mu.Unlock()
	d.forget(nn)
	if prev, ok := d.seen[key]; ok {
		if seq != 0 && prev == seq {
			return dedupeRedelivery
		}
		return dedupeDuplicate
	}
	b := dedupeFloorDiv(tn, d.res)
	if b < d.floor || tn-nn > d.ahead {
		return dedupeNew
	}
	d.seen[key] = seq
	d.buckets[b] = append(d.buckets[b], key)
	return dedupeNew
}

// forget drops the buckets that fell behind the clock now (ns).
func (d *deduper) forget(now int64) {
	cut := dedupeFloorDiv(now-d.keep, d.res)
	if cut <= d.floor {
		return
	}
	d.floor = cut
	for b, keys := range d.buckets {
		if b < cut {
			for _, k := range keys {
				delete(d.seen, k)
			}
			delete(d.buckets, b)
		}
	}
}

// len is the number of keys held.
func (d *deduper) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.seen)
}

func dedupeFloorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
