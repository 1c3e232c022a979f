package hub

import "container/list"

// lru is a map that forgets its least recently used entries beyond max
// entries or maxBytes of their sizes: what the hub keeps per party must
// not grow with what clients ask. It is not safe for concurrent use.
type lru[K comparable, V any] struct {
	max, maxBytes int
	bytes         int
	order         list.List // of *lruEntry[K, V], the most recent first
	items         map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	key  K
	val  V
	size int
}

func newLRU[K comparable, V any](max, maxBytes int) *lru[K, V] {
	return &lru[K, V]{max: max, maxBytes: maxBytes, items: map[K]*list.Element{}}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	el, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry[K, V]).val, true
}

// put keeps v under k, counted as size bytes, and forgets the least
// recently used entries until the bounds hold again; the newest entry is
// kept even if it alone is larger than maxBytes.
func (c *lru[K, V]) put(k K, v V, size int) {
	if el, ok := c.items[k]; ok {
		e := el.Value.(*lruEntry[K, V])
		c.bytes += size - e.size
		e.val, e.size = v, size
		c.order.MoveToFront(el)
	} else {
		c.items[k] = c.order.PushFront(&lruEntry[K, V]{key: k, val: v, size: size})
		c.bytes += size
	}
	for c.order.Len() > 1 && (c.order.Len() > c.max || c.bytes > c.maxBytes) {
		c.remove(c.order.Back().Value.(*lruEntry[K, V]).key)
	}
}

func (c *lru[K, V]) remove(k K) {
	if el, ok := c.items[k]; ok {
		c.bytes -= el.Value.(*lruEntry[K, V]).size
		c.order.Remove(el)
		delete(c.items, k)
	}
}

func (c *lru[K, V]) len() int { return c.order.Len() }
