package projection

import (
	"container/list"
	"sync"
)

// sessionCache keeps a value per Session for the most recently used
// Sessions; past max the least recently used one falls out. It locks, as
// a batch folds several Sessions at once and readers share a Store.
//
// The worker keeps its working copies of the Views it wrote in one, so a
// busy Session is folded without a KV read per batch. A cached View may be
// stale when another worker wrote since; the next compare-and-set write
// then fails and the worker reloads. Each Session is folded by one
// goroutine at a time, which folds its copy in place. The Store keeps the
// Views as last written or read in another (Store.seen), for CaughtUp.
type sessionCache[V any] struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *cached[V], front = most recent
	byID  map[string]*list.Element
}

type cached[V any] struct {
	sid   string
	value V
}

func newSessionCache[V any](max int) *sessionCache[V] {
	return &sessionCache[V]{max: max, order: list.New(), byID: make(map[string]*list.Element)}
}

func (c *sessionCache[V]) get(sid string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[sid]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cached[V]).value, true
}

func (c *sessionCache[V]) put(sid string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[sid]; ok {
		el.Value.(*cached[V]).value = v
		c.order.MoveToFront(el)
		return
	}
	c.byID[sid] = c.order.PushFront(&cached[V]{sid: sid, value: v})
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.byID, oldest.Value.(*cached[V]).sid)
	}
}

// update replaces sid's value with what change makes of it, when sid is
// kept and change says to.
func (c *sessionCache[V]) update(sid string, change func(V) (V, bool)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[sid]; ok {
		e := el.Value.(*cached[V])
		if v, replace := change(e.value); replace {
			e.value = v
		}
	}
}

// drop forgets sid, for a View that was folded in place but not written.
func (c *sessionCache[V]) drop(sid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[sid]; ok {
		c.order.Remove(el)
		delete(c.byID, sid)
	}
}
