package projection

import (
	"container/list"
	"sync"
)

// viewCache keeps the most recently written Views, so a busy Session is
// folded without a KV read per batch. It is bounded: the least recently
// used Session falls out first. A cached entry may be stale when another
// worker wrote since; the next compare-and-set write then fails and the
// worker reloads. A batch folds several Sessions at once, so it locks;
// each Session is folded by one goroutine at a time.
type viewCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *cached, front = most recent
	byID  map[string]*list.Element
}

type cached struct {
	sid string
	entry
}

func newViewCache(max int) *viewCache {
	return &viewCache{max: max, order: list.New(), byID: make(map[string]*list.Element)}
}

func (c *viewCache) get(sid string) (entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[sid]
	if !ok {
		return entry{}, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cached).entry, true
}

func (c *viewCache) put(sid string, e entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[sid]; ok {
		el.Value.(*cached).entry = e
		c.order.MoveToFront(el)
		return
	}
	c.byID[sid] = c.order.PushFront(&cached{sid: sid, entry: e})
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.byID, oldest.Value.(*cached).sid)
	}
}

// drop forgets sid, for a View that was folded in place but not written.
func (c *viewCache) drop(sid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[sid]; ok {
		c.order.Remove(el)
		delete(c.byID, sid)
	}
}
