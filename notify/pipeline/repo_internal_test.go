package pipeline

import (
	"fmt"
	"testing"
)

// The commit cache keeps at most its bound, dropping the least recently
// used.
func TestCommitMetadataCacheBounded(t *testing.T) {
	l := newLRUCache[int](3)
	for i := range 5 {
		l.add(fmt.Sprint(i), i)
		if i == 2 {
			l.get("0") // 0 is now more recent than 1 and 2
		}
	}
	if n := l.c.Len(); n != 3 {
		t.Fatalf("%d entries, want 3", n)
	}
	for k, want := range map[string]bool{"0": true, "1": false, "2": false, "3": true, "4": true} {
		if _, ok := l.get(k); ok != want {
			t.Errorf("%s cached = %v, want %v", k, ok, want)
		}
	}
}
