package embeddedtest

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
)

// Proxy is a loopback TCP proxy in front of a NATS server, for fault
// tests that need a client's connection to fail at a chosen point: cut
// (every connection closed, new ones refused until healed, as when the
// network goes away), held right after a chosen publish has reached the
// server (nothing the client sends afterwards arrives, as when it dies at
// that instant), or with chosen publishes stalled (kept back while the
// rest passes, as when one message is slow to be stored). It reads the
// NATS protocol the clients send only to find publishes; everything else
// passes through unchanged.
type Proxy struct {
	t      testing.TB
	target string
	ln     net.Listener

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
	hold  func(subject string, h nats.Header) bool
	held  chan struct{}
	// stall keeps back the publishes it accepts, each with the server
	// connection it was on its way to, until released.
	stall   func(subject string, h nats.Header) bool
	stalled chan struct{}
	kept    []stalledPub
}

// stalledPub is a publish kept back by Stall.
type stalledPub struct {
	server net.Conn
	frame  []byte
}

// NewProxy listens on an ephemeral loopback port and forwards to the
// server at url (nats://host:port). It stops when the test ends.
func NewProxy(t testing.TB, url string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{t: t, target: hostPort(url), ln: ln, conns: map[net.Conn]bool{}}
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.Cut()
	})
	return p
}

func hostPort(url string) string {
	for _, prefix := range []string{"nats://", "tls://"} {
		if rest, ok := bytes.CutPrefix([]byte(url), []byte(prefix)); ok {
			return string(rest)
		}
	}
	return url
}

// URL is where clients connect to reach the server through the proxy.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// Cut closes every connection through the proxy and refuses new ones
// until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Heal lets clients connect again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// HoldAfter makes the proxy stop passing on anything a client sends once
// it has passed on a publish that match accepts (by subject and headers);
// the returned channel is closed at that moment. What the server sends
// still reaches the clients.
func (p *Proxy) HoldAfter(match func(subject string, h nats.Header) bool) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold, p.held = match, make(chan struct{})
	return p.held
}

// Stall keeps back every publish that match accepts (by subject and
// headers), passing on everything else the clients send meanwhile; the
// returned channel is closed once one has been kept back. release passes
// the kept publishes on to the server and stops stalling.
func (p *Proxy) Stall(match func(subject string, h nats.Header) bool) (stalled <-chan struct{}, release func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stall, p.stalled = match, make(chan struct{})
	return p.stalled, func() {
		p.mu.Lock()
		kept := p.kept
		p.stall, p.kept = nil, nil
		p.mu.Unlock()
		for _, k := range kept {
			_, _ = k.server.Write(k.frame)
		}
	}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[s] = true, true
		p.mu.Unlock()
		go func() {
			_, _ = io.Copy(c, s)
			_ = c.Close()
		}()
		go func() {
			p.forward(s, bufio.NewReader(c))
			_ = s.Close()
		}()
	}
}

// forward passes what a client sends on to the server, one protocol line
// (with its payload) at a time, until the connection ends or a hold
// starts.
func (p *Proxy) forward(server net.Conn, client *bufio.Reader) {
	for {
		line, err := client.ReadBytes('\n')
		if err != nil {
			return
		}
		frame, subject, hdr := line, "", 0
		if fields := bytes.Fields(line); len(fields) >= 3 && (string(fields[0]) == "PUB" || string(fields[0]) == "HPUB") {
			size, _ := strconv.Atoi(string(fields[len(fields)-1]))
			if string(fields[0]) == "HPUB" {
				hdr, _ = strconv.Atoi(string(fields[len(fields)-2]))
			}
			payload := make([]byte, size+2) // and its CRLF
			if _, err := io.ReadFull(client, payload); err != nil {
				return
			}
			frame, subject = append(line, payload...), string(fields[1])
		}
		if subject != "" && p.keeps(server, subject, frame, len(line), hdr) {
			continue
		}
		if _, err := server.Write(frame); err != nil {
			return
		}
		if subject != "" && p.holds(subject, frame[len(line):len(line)+hdr]) {
			_, _ = io.Copy(io.Discard, client)
			return
		}
	}
}

func (p *Proxy) holds(subject string, header []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hold == nil || !p.hold(subject, decodeHeader(header)) {
		return false
	}
	p.hold = nil
	close(p.held)
	return true
}

// keeps keeps back the publish frame on its way to server when Stall
// accepts it; its header is the hdr bytes after the protocol line of
// length line.
func (p *Proxy) keeps(server net.Conn, subject string, frame []byte, line, hdr int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stall == nil || !p.stall(subject, decodeHeader(frame[line:line+hdr])) {
		return false
	}
	if len(p.kept) == 0 {
		close(p.stalled)
	}
	p.kept = append(p.kept, stalledPub{server: server, frame: frame})
	return true
}

func decodeHeader(header []byte) nats.Header {
	if len(header) > 0 {
		if h, err := nats.DecodeHeadersMsg(header); err == nil {
			return h
		}
	}
	return nats.Header{}
}
