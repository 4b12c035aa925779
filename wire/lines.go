package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"github.com/shadoweval/shadoweval/internal/pycompat"
)

// blockSize is how much of a file one worker decodes at a time: large enough
// to amortise the hand-off, small enough to keep memory flat.
const blockSize = 1 << 20

// ParallelLines reads a JSONL stream the way the reference scorers do
// (universal newlines; lines that Python's strip() leaves empty are
// skipped) and calls decode on every other line from GOMAXPROCS goroutines.
// emit then receives the results one at a time in file order with their
// 1-based line numbers, so "last one wins" rules can be applied. decode gets
// the line with Python white space stripped. The first error, in file
// order, stops the work; decode errors come back as *LineError for name.
func ParallelLines[T any](r io.Reader, name string, decode func(line []byte) (T, error), emit func(lineNo int, v T) error) error {
	workers := runtime.GOMAXPROCS(0)
	type result struct {
		lines  []int // relative line number of each value
		values []T
		count  int // lines in the block, blank ones included
		errAt  int // relative line of err
		err    error
		block  []byte // returned to the pool once emitted
	}
	type job struct {
		data []byte
		out  chan result
	}
	jobs := make(chan job, workers)
	blocks := sync.Pool{New: func() any { return make([]byte, 0, blockSize) }}
	order := make(chan chan result, workers*2)
	stop := make(chan struct{})
	var readErr error
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var res result
				pycompat.SplitLines(j.data, func(n int, line []byte) bool {
					res.count = n
					line = bytes.TrimFunc(line, pycompat.IsSpace)
					if len(line) == 0 {
						return true
					}
					v, err := decode(line)
					if err != nil {
						res.err, res.errAt = err, n
						return false
					}
					res.lines = append(res.lines, n)
					res.values = append(res.values, v)
					return true
				})
				res.block = j.data
				j.out <- res
			}
		}()
	}
	go func() {
		defer close(jobs)
		defer close(order)
		buf := make([]byte, 0, blockSize)
		var carry []byte
		for {
			buf = append(buf[:0], carry...)
			n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
			if err != nil && !eof {
				readErr = err
				return
			}
			cut := len(buf)
			if !eof {
				// Cut after the last \n so no line (and no \r\n) straddles
				// two blocks; a line longer than a block grows the buffer.
				cut = bytes.LastIndexByte(buf, '\n') + 1
				if cut == 0 {
					carry = append([]byte(nil), buf...)
					buf = make([]byte, 0, 2*cap(buf))
					continue
				}
			}
			block := append(blocks.Get().([]byte)[:0], buf[:cut]...)
			carry = append(carry[:0], buf[cut:]...)
			out := make(chan result, 1)
			select {
			case order <- out:
			case <-stop:
				return
			}
			jobs <- job{data: block, out: out}
			if eof {
				return
			}
		}
	}()
	var firstErr error
	base := 0
	for out := range order {
		res := <-out
		if firstErr != nil {
			continue
		}
		for i, v := range res.values {
			if err := emit(base+res.lines[i], v); err != nil {
				firstErr = err
				break
			}
		}
		if firstErr == nil && res.err != nil {
			firstErr = &LineError{File: name, Line: base + res.errAt, Err: res.err}
		}
		if firstErr != nil {
			close(stop)
		}
		base += res.count
		blocks.Put(res.block[:0]) //nolint:staticcheck // a slice header is fine here
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if readErr != nil {
		return fmt.Errorf("%s: %w", name, readErr)
	}
	return nil
}

// ReadFileLines is ParallelLines over a file.
func ReadFileLines[T any](path string, decode func(line []byte) (T, error), emit func(lineNo int, v T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return ParallelLines(f, path, decode, emit)
}
