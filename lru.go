package adapter

import (
	"container/list"
	"context"
	"sync"
)

// LRU is an in-memory least-recently-used Cache.
type LRU struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recent
	items map[string]*list.Element
}

type lruEntry struct {
	key   string
	entry CacheEntry
}

// NewLRU returns an LRU holding at most n responses (n < 1 means 1000).
func NewLRU(n int) *LRU {
	if n < 1 {
		n = 1000
	}
	return &LRU{max: n, order: list.New(), items: map[string]*list.Element{}}
}

// Get returns a stored reply.
func (l *LRU) Get(_ context.Context, key string) (CacheEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.items[key]
	if !ok {
		return CacheEntry{}, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruEntry).entry, true
}

// Put stores a reply, evicting the least recently used beyond the size.
func (l *LRU) Put(_ context.Context, key string, entry CacheEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.items[key]; ok {
		e.Value.(*lruEntry).entry = entry
		l.order.MoveToFront(e)
		return
	}
	l.items[key] = l.order.PushFront(&lruEntry{key, entry})
	for l.order.Len() > l.max {
		last := l.order.Back()
		l.order.Remove(last)
		delete(l.items, last.Value.(*lruEntry).key)
	}
}
