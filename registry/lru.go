package registry

import (
	"container/list"
	"sync"
)

// lru is a small, size-bounded, least-recently-used map of digest to
// manifest facts. Entries never go stale: a digest names immutable content.
type lru struct {
	mu    sync.Mutex
	max   int
	order *list.List // front = most recent
	items map[string]*list.Element
}

type lruItem struct {
	key string
	val manifestInfo
}

func newLRU(maxEntries int) *lru {
	return &lru{max: maxEntries, order: list.New(), items: map[string]*list.Element{}}
}

func (l *lru) get(key string) (manifestInfo, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	el, ok := l.items[key]
	if !ok {
		return manifestInfo{}, false
	}
	l.order.MoveToFront(el)
	return el.Value.(*lruItem).val, true
}

func (l *lru) add(key string, val manifestInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if el, ok := l.items[key]; ok {
		el.Value.(*lruItem).val = val
		l.order.MoveToFront(el)
		return
	}
	l.items[key] = l.order.PushFront(&lruItem{key: key, val: val})
	for l.order.Len() > l.max {
		old := l.order.Back()
		l.order.Remove(old)
		delete(l.items, old.Value.(*lruItem).key)
	}
}

func (l *lru) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.order.Len()
}
