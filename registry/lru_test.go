package registry

import (
	"fmt"
	"testing"
	"time"
)

func TestLRUEvictsLeastRecentlyUsed(t *testing.T) {
	l := newLRU(2)
	l.add("a", manifestInfo{created: t0})
	l.add("b", manifestInfo{created: t0.Add(time.Hour)})
	if _, ok := l.get("a"); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	l.add("c", manifestInfo{})
	if _, ok := l.get("b"); ok {
		t.Error("b survived; it was the least recently used")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := l.get(k); !ok {
			t.Errorf("%s was evicted", k)
		}
	}
	for i := range 100 {
		l.add(fmt.Sprint(i), manifestInfo{})
	}
	if n := l.len(); n != 2 {
		t.Errorf("len = %d, want the bound 2", n)
	}
}
