package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
)

// proxy forwards every TCP connection made to its port to a target
// address, and can cut them all at once: what a server's peers and
// clients see when the server's machine dies (no goodbye reaches them),
// which a server shut down in process, stepping down its leaders first,
// does not show. nats-server's own tests put such proxies between their
// servers (netProxy).
type proxy struct {
	addr   string        // 127.0.0.1:port, the same after resume
	target func() string // read at each connection: the server may move
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
}

// newProxy listens on a free port of 127.0.0.1; it stops when the test
// ends.
func newProxy(t testing.TB, target func() string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // cut
			}
			go p.forward(c)
		}
	}()
}

// forward copies both ways between c and a new connection to the target
// until either side ends or the proxy is cut.
func (p *proxy) forward(c net.Conn) {
	t, err := net.Dial("tcp", p.target())
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, t) {
		return
	}
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		dst.Close()
		src.Close()
	}
	go pipe(t, c)
	go pipe(c, t)
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, t)
	p.mu.Unlock()
}

// track records both ends, or closes them when the proxy was cut.
func (p *proxy) track(c, t net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		c.Close()
		t.Close()
		return false
	}
	p.conns[c], p.conns[t] = struct{}{}, struct{}{}
	return true
}

// cut closes the listener and every connection: the far ends see them
// reset, and new ones are refused.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// resume listens on the proxy's port again, unless it does.
func (p *proxy) resume(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	up := p.ln != nil
	p.mu.Unlock()
	if up {
		return
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatalf("proxy %s: %v", p.addr, err)
	}
	p.serve(ln)
}
