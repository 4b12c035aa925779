package sidecar

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shadoweval/shadoweval/sidecar/checks"
	"github.com/shadoweval/shadoweval/stream"
	"github.com/shadoweval/shadoweval/window"
)

// GoldSet is one loaded, validated gold file: the items by qid.
type GoldSet struct {
	Items    map[string]*checks.Gold
	Source   string
	LoadedAt time.Time
	stat     fileStamp
}

// Len is the number of distinct qids.
func (s *GoldSet) Len() int {
	if s == nil {
		return 0
	}
	return len(s.Items)
}

// maxReportedRowErrors caps how many bad rows one refusal lists.
const maxReportedRowErrors = 10

// LoadGold reads and validates a whole gold file. Any bad row refuses the
// file; the error lists up to ten rows with their line numbers. A repeated
// qid keeps its last row, as the reference does.
func LoadGold(path string) (*GoldSet, error) {
	st, err := stampOf(path)
	if err != nil {
		return nil, fmt.Errorf("gold %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gold %w", err)
	}
	defer f.Close()
	items := make(map[string]*checks.Gold)
	var rowErrs []error
	// ParallelLines stops at the first error; to list several bad rows the
	// decoder records failures as values instead.
	type row struct {
		g   stream.Gold
		err error
	}
	err = stream.ParallelLines(f, path, func(line []byte) (row, error) {
		g, err := stream.DecodeGold(line)
		return row{g, err}, nil
	}, func(lineNo int, r row) error {
		if r.err != nil {
			rowErrs = append(rowErrs, &stream.LineError{File: path, Line: lineNo, Err: r.err})
			if len(rowErrs) == maxReportedRowErrors {
				return errTooManyRowErrors
			}
			return nil
		}
		items[r.g.QID] = checks.NewGold(r.g)
		return nil
	})
	if err != nil && !errors.Is(err, errTooManyRowErrors) {
		return nil, fmt.Errorf("gold %w", err)
	}
	if len(rowErrs) > 0 {
		return nil, fmt.Errorf("gold file %s refused: %w", path, errors.Join(rowErrs...))
	}
	return &GoldSet{Items: items, Source: path, LoadedAt: time.Now(), stat: st}, nil
}

var errTooManyRowErrors = errors.New("too many bad rows")

// GoldStore holds the gold set in force and swaps it atomically on reload;
// a refused file leaves the old set in force.
type GoldStore struct {
	path    string
	current atomic.Pointer[GoldSet]
	mu      sync.Mutex // serialises reloads
	// keys numbers every qid any loaded set had, for the windows' λ groups
	// (window.Observation.QIDKey): a qid keeps its number across reloads.
	// Under mu.
	keys map[string]uint32
	// OnReload is called after every reload attempt with its outcome.
	OnReload func(set *GoldSet, err error)
}

// NewGoldStore returns a store for path with nothing loaded yet.
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
	g, ok := set.Items[qid]
	return g, ok
}

// Reload reads the file again and swaps it in when it is valid.
func (s *GoldStore) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	set, err := LoadGold(s.path)
	if err == nil {
		s.number(set)
		s.current.Store(set)
	}
	if s.OnReload != nil {
		s.OnReload(set, err)
	}
	return err
}

// number gives each item of set its qid's key, new qids the next ones.
// The keys are never released: they are bounded by the distinct qids of
// the gold files loaded, and a key reused for another qid would merge two
// λ groups in a window that still holds the first. s.mu is held.
func (s *GoldStore) number(set *GoldSet) {
	if s.keys == nil {
		s.keys = make(map[string]uint32, len(set.Items))
	}
	for qid, it := range set.Items {
		k, ok := s.keys[qid]
		if !ok && len(s.keys) < window.MaxQIDKey-1 {
			k = uint32(len(s.keys)) + 1
			s.keys[qid] = k
		}
		it.Key = k // 0 past the bound: the windows number it
	}
}

// Watch reloads the gold file whenever it changes (size, modification
// time or inode, so a ConfigMap's symlink swap counts), checking every
// interval until ctx ends. A refused version is not retried until the file
// changes again.
func (s *GoldStore) Watch(ctx context.Context, interval time.Duration) {
	last, _ := stampOf(s.path)
	if set := s.Current(); set != nil {
		last = set.stat
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := stampOf(s.path)
		if err != nil || st == last {
			continue
		}
		last = st
		s.Reload() //nolint:errcheck // reported through OnReload
	}
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
