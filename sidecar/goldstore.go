package sidecar

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/window"
	"github.com/shadoweval/shadoweval/wire"
)

// GoldSet is the gold in force: the items of the gold file overlaid by
// those of the gold KV bucket (gold.kv_bucket). A set in force is never
// changed: every reload or bucket change makes a new one.
type GoldSet struct {
	// Items are the gold file's items by qid; nil without a file.
	Items map[string]*checks.Gold
	// KV are the bucket's good items by qid; one wins over the file's item
	// of its qid. nil without a bucket.
	KV       map[string]*checks.Gold
	Source   string    // the gold file; "" without one
	LoadedAt time.Time // when the file (without one: the bucket) was last read whole
	stat     fileStamp
	n        int // distinct qids
}

// Len is the number of distinct qids.
func (s *GoldSet) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Lookup finds the gold item of qid: the bucket's, else the file's.
func (s *GoldSet) Lookup(qid string) (*checks.Gold, bool) {
	if g, ok := s.KV[qid]; ok {
		return g, true
	}
	g, ok := s.Items[qid]
	return g, ok
}

// LoadGold reads and validates a whole gold file. Any bad row refuses the
// file; the error lists up to ten rows with their line numbers. A repeated
// qid keeps its last row, as the reference does.
func LoadGold(path string) (*GoldSet, error) { return loadGold(path, nil) }

// loadGold is LoadGold keeping only the items whose qid keep takes (nil:
// all); the others are checked as well.
func loadGold(path string, keep func(qid string) bool) (*GoldSet, error) {
	st, err := stampOf(path)
	if err != nil {
		return nil, fmt.Errorf("gold %w", err)
	}
	items := make(map[string]*checks.Gold)
	err = wire.ReadGoldFileKeeping(path, keep, checks.NewGold, func(g *checks.Gold) {
		if keep == nil || keep(g.QID) { // a row whose qid only the decoder reads
			items[g.QID] = g
		}
	})
	if err != nil {
		return nil, err
	}
	return &GoldSet{Items: items, Source: path, LoadedAt: time.Now(), stat: st, n: len(items)}, nil
}

// GoldStore holds the gold set in force and swaps it atomically on reload
// and on each batch of bucket changes; a refused file leaves the old file
// items in force.
type GoldStore struct {
	path    string
	current atomic.Pointer[GoldSet]
	mu      sync.Mutex // serialises changes
	// file is the last good load of the file (nil before it or without
	// one) and kv the bucket's good items (nil before LoadKV). A published
	// kv map is never written again: ApplyKV copies it. Under mu.
	file *GoldSet
	kv   map[string]*checks.Gold
	// keys numbers every qid any loaded set had, for the windows' λ groups
	// (window.Observation.QIDKey): a qid keeps its number across reloads.
	// Under mu.
	keys map[string]uint32
	// Keep, when set, chooses the items held (file and bucket alike): a
	// cluster member holds its partitions' gold only. Set before loading.
	Keep func(qid string) bool
	// OnReload is called after every reload attempt with its outcome.
	OnReload func(set *GoldSet, err error)
	// OnChange, when set, sees every set put in force, in order (it is
	// called under the store's lock).
	OnChange func(set *GoldSet)
}

// NewGoldStore returns a store for the gold file path ("": none) with
// nothing loaded yet.
func NewGoldStore(path string) *GoldStore { return &GoldStore{path: path} }

// Path is the gold file.
func (s *GoldStore) Path() string { return s.path }

// Current is the gold set in force, nil before the first good load.
func (s *GoldStore) Current() *GoldSet { return s.current.Load() }

// Lookup finds the gold item of qid in the set in force.
func (s *GoldStore) Lookup(qid string) (*checks.Gold, bool) {
	set := s.current.Load()
	if set == nil {
		return nil, false
	}
	return set.Lookup(qid)
}

// Reload reads the file again and swaps it in when it is valid. Without a
// file there is nothing to read: the set in force stays (the bucket is
// followed as it changes) and Reload succeeds.
func (s *GoldStore) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.path == "" {
		if s.kv == nil {
			return nil // nothing loaded yet
		}
		set := s.publish(time.Now())
		if s.OnReload != nil {
			s.OnReload(set, nil)
		}
		return nil
	}
	file, err := loadGold(s.path, s.Keep)
	var set *GoldSet
	if err == nil {
		s.number(file)
		s.file = file
		set = s.publish(file.LoadedAt)
	}
	if s.OnReload != nil {
		s.OnReload(set, err)
	}
	return err
}

// GoldReject is a bucket value refused: its key, the reason (a
// shadoweval_rejected_events_total reason, or qid_mismatch) and the error.
type GoldReject struct {
	Key    string
	Reason string
	Err    error
}

// LoadKV puts the bucket's whole content in force in place of what it had
// before. A refused value is left out (the file's item of its qid, if any,
// applies) and returned. Without a file this is the gold's load, reported
// to OnReload as a file load would be.
func (s *GoldStore) LoadKV(entries []stream.KVChange) []GoldReject {
	s.mu.Lock()
	defer s.mu.Unlock()
	kv := make(map[string]*checks.Gold, len(entries))
	rejects := s.applyKV(kv, entries)
	s.kv = kv
	if s.path != "" {
		s.publish(time.Time{})
		return rejects
	}
	set := s.publish(time.Now())
	if s.OnReload != nil {
		s.OnReload(set, nil)
	}
	return rejects
}

// ApplyKV applies changes of the bucket, in order: a put adds or replaces
// the item of its key, a delete removes it. A refused value removes the
// key's item too, so that the set in force is always what the bucket holds
// now, whatever its history; the refusals are returned.
func (s *GoldStore) ApplyKV(changes []stream.KVChange) []GoldReject {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Copy on write: Lookup reads the published map without a lock. The
	// caller batches changes, so a burst costs one copy.
	kv := make(map[string]*checks.Gold, len(s.kv)+len(changes))
	for qid, g := range s.kv {
		kv[qid] = g
	}
	rejects := s.applyKV(kv, changes)
	s.kv = kv
	s.publish(time.Time{})
	return rejects
}

// applyKV applies changes to kv. s.mu is held.
func (s *GoldStore) applyKV(kv map[string]*checks.Gold, changes []stream.KVChange) []GoldReject {
	var rejects []GoldReject
	for _, c := range changes {
		if c.Deleted {
			delete(kv, c.Key)
			continue
		}
		g, reason, err := decodeGoldValue(c.Key, c.Value)
		if err != nil {
			delete(kv, c.Key)
			rejects = append(rejects, GoldReject{Key: c.Key, Reason: reason, Err: err})
			continue
		}
		if s.Keep != nil && !s.Keep(g.QID) {
			delete(kv, c.Key)
			continue
		}
		g.Key = s.key(g.QID)
		kv[g.QID] = g
	}
	return rejects
}

// decodeGoldValue decodes the value of a bucket key: one gold line whose
// qid is the key, so that a key names the one item it holds.
func decodeGoldValue(key string, value []byte) (*checks.Gold, string, error) {
	g, err := wire.DecodeGold(value)
	if err != nil {
		return nil, decodeReason(err), err
	}
	if g.QID != key {
		return nil, ReasonQIDMismatch, fmt.Errorf("qid %q is not the key", g.QID)
	}
	return checks.NewGold(g), "", nil
}

// publish puts the file's items and the bucket's in force as one set,
// loaded at at (zero: when the set in force was). s.mu is held.
func (s *GoldStore) publish(at time.Time) *GoldSet {
	set := &GoldSet{KV: s.kv, LoadedAt: at}
	if s.file != nil {
		set.Items, set.Source, set.stat = s.file.Items, s.file.Source, s.file.stat
	}
	if at.IsZero() {
		if old := s.current.Load(); old != nil {
			set.LoadedAt = old.LoadedAt
		}
	}
	set.n = len(set.Items)
	for qid := range set.KV {
		if _, ok := set.Items[qid]; !ok {
			set.n++
		}
	}
	s.current.Store(set)
	if s.OnChange != nil {
		s.OnChange(set)
	}
	return set
}

// number gives each item of set its qid's key. s.mu is held.
func (s *GoldStore) number(set *GoldSet) {
	for qid, it := range set.Items {
		it.Key = s.key(qid)
	}
}

// key is the λ group key of qid, new qids getting the next ones. The keys
// are never released: they are bounded by the distinct qids of the gold
// loaded, and a key reused for another qid would merge two λ groups in a
// window that still holds the first. 0 past the bound: the windows number
// the qid. s.mu is held.
func (s *GoldStore) key(qid string) uint32 {
	if s.keys == nil {
		s.keys = make(map[string]uint32)
	}
	k, ok := s.keys[qid]
	if !ok && len(s.keys) < window.MaxQIDKey-1 {
		k = uint32(len(s.keys)) + 1
		s.keys[qid] = k
	}
	return k
}

// Watch reloads the gold file whenever it changes (size, modification
// time or inode, so a ConfigMap's symlink swap counts), checking every
// interval until ctx ends. A refused version is not retried until the file
// changes again.
func (s *GoldStore) Watch(ctx context.Context, interval time.Duration) {
	if s.path == "" {
		return
	}
	last, _ := stampOf(s.path)
	if set := s.Current(); set != nil {
		last = set.stat
	}
	every(ctx, interval, func() {
		st, err := stampOf(s.path)
		if err != nil || st == last {
			return
		}
		last = st
		s.Reload() //nolint:errcheck // reported through OnReload
	})
}

// fileStamp identifies a version of a file cheaply.
type fileStamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}, nil
}
