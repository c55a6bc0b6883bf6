package worker

import (
	"sync"

	"github.com/nats-io/nats.go"
)

// callerLeases is what the worker knows of its callers' leases: which
// ones it has seen exist and not heard deleted since. A wait of a caller
// known to exist needs no look-up, since its deletion is advised after the
// wait started and then ends the wait; any other caller may have died
// before its request arrived, leaving no advisory to hear, so its lease is
// looked up. What is known holds only on the connection as it was: a
// reconnect may have lost advisories, so it forgets everything.
type callerLeases struct {
	nc *nats.Conn

	mu    sync.Mutex
	known map[string]struct{}
	at    uint64 // the reconnect count known holds for
	gones uint64 // deletions heard, so a look-up that raced one is not kept
}

// callerCheck is a look-up of a caller's lease, and what it needs to be
// remembered.
type callerCheck struct {
	name      string
	gones, at uint64
}

func newCallerLeases(nc *nats.Conn) *callerLeases {
	return &callerLeases{nc: nc, known: make(map[string]struct{})}
}

// unknown reports whether name needs a look-up, and returns it.
func (c *callerLeases) unknown(name string) (callerCheck, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at := c.nc.Stats().Reconnects; at != c.at {
		clear(c.known)
		c.at = at
	}
	if _, ok := c.known[name]; ok {
		return callerCheck{}, false
	}
	return callerCheck{name: name, gones: c.gones, at: c.at}, true
}

// seen remembers the lease the look-up found, unless a deletion may have
// been heard or the connection reconnected since the look-up began.
func (c *callerLeases) seen(check callerCheck) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gones == check.gones && c.at == check.at {
		c.known[check.name] = struct{}{}
	}
}

// gone forgets name, whose deletion was heard.
func (c *callerLeases) gone(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.known, name)
	c.gones++
}

// knows reports whether name is known to exist.
func (c *callerLeases) knows(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.known[name]
	return ok
}
