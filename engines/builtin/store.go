package builtin

import (
	"net/http"
	"time"
)

// object is a complete stored copy. It never changes once stored.
type object struct {
	status  int
	header  http.Header // prebuilt: origin headers minus hop-by-hop, plus Content-Length
	body    []byte
	fetched time.Time // when the origin's response headers arrived
	ttl     time.Duration
}

// item is everything the cache knows about one key. Guarded by Cache.mu.
type item struct {
	key        string
	cur        *object   // the stored copy, or nil
	fill       *fill     // the shared fetch in flight (coalescing, revalidation), or nil
	pending    int       // fetches in flight for this item, shared or not
	lastBg     time.Time // when the last background fetch started
	lastFailed bool      // the last fetch that finished failed (error, timeout, 5xx)

	prev, next *item // LRU links, while cur != nil
}

// lruList is a circular doubly linked list of items with a stored copy, most
// recently used first.
type lruList struct{ root item }

func (l *lruList) init() { l.root.prev, l.root.next = &l.root, &l.root }

func (l *lruList) remove(it *item) {
	it.prev.next, it.next.prev = it.next, it.prev
	it.prev, it.next = nil, nil
}

func (l *lruList) pushFront(it *item) {
	it.prev, it.next = &l.root, l.root.next
	l.root.next.prev = it
	l.root.next = it
}

func (l *lruList) moveToFront(it *item) {
	if l.root.next == it {
		return
	}
	l.remove(it)
	l.pushFront(it)
}

// back is the least recently used item, or nil.
func (l *lruList) back() *item {
	if l.root.prev == &l.root {
		return nil
	}
	return l.root.prev
}

// startFillLocked starts an origin fetch for key and returns it, or nil once
// the cache is closed. Shared fetches (coalescing, background) are recorded
// on the item so others can join them.
func (c *Cache) startFillLocked(key string, it *item, background bool, now time.Time) *fill {
	if c.closed {
		return nil
	}
	if it == nil {
		it = &item{key: key}
		c.items[key] = it
	}
	f := newFill(key)
	if c.p.Coalesce || background {
		it.fill = f
	}
	if background {
		it.lastBg = now
		c.st.backgroundFetches.Add(1)
	}
	it.pending++
	c.wg.Add(1)
	go c.runFill(it, f)
	return f
}

// revalidateLocked starts a background fetch for a stale item unless the
// revalidation rule (package documentation) says to wait.
func (c *Cache) revalidateLocked(it *item, now time.Time) {
	if it.fill != nil {
		return
	}
	if (it.lastFailed || !c.healthy.Load()) && !it.lastBg.IsZero() && now.Sub(it.lastBg) < c.gap {
		return
	}
	c.startFillLocked(it.key, it, true, now)
}

// finish records the end of fetch f for it: the object is stored only if it
// is a complete, cacheable 200 and the item was not purged meanwhile.
func (c *Cache) finish(it *item, f *fill, o *object, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if it.fill == f {
		it.fill = nil
	}
	it.pending--
	it.lastFailed = failed
	attached := c.items[it.key] == it
	if o != nil && attached && !c.closed && int64(len(o.body)) <= c.p.MaxBytes {
		c.storeLocked(it, o)
		return
	}
	if attached && it.cur == nil && it.pending == 0 {
		delete(c.items, it.key)
	}
}

func (c *Cache) storeLocked(it *item, o *object) {
	if it.cur != nil {
		c.bytes -= int64(len(it.cur.body))
		c.lru.moveToFront(it)
	} else {
		c.objects++
		c.lru.pushFront(it)
	}
	it.cur = o
	c.bytes += int64(len(o.body))
	for c.bytes > c.p.MaxBytes {
		v := c.lru.back()
		if v == nil || v == it {
			break
		}
		c.dropLocked(v)
		c.st.evictions.Add(1)
		if v.pending == 0 {
			delete(c.items, v.key)
		}
	}
}

// dropLocked removes it's stored copy.
func (c *Cache) dropLocked(it *item) {
	c.bytes -= int64(len(it.cur.body))
	c.objects--
	c.lru.remove(it)
	it.cur = nil
}

// purgeLocked forgets key: its stored copy, and any fetch in flight will not
// be stored. It reports whether there was a stored copy.
func (c *Cache) purgeLocked(key string) bool {
	it := c.items[key]
	if it == nil {
		return false
	}
	found := it.cur != nil
	if found {
		c.dropLocked(it)
	}
	delete(c.items, key)
	return found
}
