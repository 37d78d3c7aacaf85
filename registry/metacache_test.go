package registry

import (
	"fmt"
	"testing"
	"time"
)

// The metadata cache keeps the most recently used digests up to
// MetadataCacheSize.
func TestMetadataCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := &Client{MetadataCacheSize: 2}
	c.init()
	c.meta.Add("a", manifestInfo{created: t0})
	c.meta.Add("b", manifestInfo{created: t0.Add(time.Hour)})
	if _, ok := c.cachedManifest("a"); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.meta.Add("c", manifestInfo{})
	if _, ok := c.cachedManifest("b"); ok {
		t.Error("b survived; it was the least recently used")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := c.cachedManifest(k); !ok {
			t.Errorf("%s was evicted", k)
		}
	}
	for i := range 100 {
		c.meta.Add(fmt.Sprint(i), manifestInfo{})
	}
	if n := c.meta.Len(); n != 2 {
		t.Errorf("len = %d, want the bound 2", n)
	}
}
