package controller

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

func TestSelectionMemoSelectsOncePerTagList(t *testing.T) {
	tags := make([]string, 200)
	for i := range tags {
		tags[i] = fmt.Sprintf("1.%d.%d", i/10, i%10)
	}
	spec := policy.Spec{Constraint: "~1.3"}
	pol, err := policy.Compile("reg.example/app", spec)
	if err != nil {
		t.Fatal(err)
	}
	client := &registry.Client{}
	var m selectionMemo
	ctx := context.Background()
	sel := func(tags []string) policy.Result {
		t.Helper()
		res, err := m.selectTag(ctx, client, "reg.example/app", spec, pol, tags, policy.Facts{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if got := sel(tags).Tag; got != "1.3.9" {
		t.Fatalf("selected %q, want 1.3.9", got)
	}
	// The same list again: answered from the memo, without ranking the
	// 200 tags again (which allocates an entry of about 100 bytes per tag).
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		sel(tags)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 20; per > 2000 {
		t.Errorf("a repeated selection allocated %d bytes: it ranked the tags again", per)
	}
	// A new list (the cache listed again) is selected from afresh, even
	// when it differs only in content.
	relisted := append([]string(nil), tags...)
	relisted[0] = "1.3.10"
	if got := sel(relisted).Tag; got != "1.3.10" {
		t.Errorf("selected %q from a new list with 1.3.10, want 1.3.10", got)
	}
	// Another policy on the same list has its own answer.
	other := policy.Spec{Constraint: "~1.2"}
	pol2, err := policy.Compile("reg.example/app", other)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := m.selectTag(ctx, client, "reg.example/app", other, pol2, relisted, policy.Facts{}); err != nil || res.Tag != "1.2.9" {
		t.Errorf("~1.2 selected %q, %v; want 1.2.9", res.Tag, err)
	}
}

// A policy that reads metadata (newest-build, digest, platforms) selects
// afresh every time: its answer depends on more than the tag list.
func TestSelectionMemoLeavesMetadataPoliciesAlone(t *testing.T) {
	tags := []string{"1.0.0", "1.1.0"}
	client := &registry.Client{}
	for _, s := range []policy.Spec{{Strategy: "newest-build"}, {Strategy: "latest"}, {Strategy: "digest", Constraint: "1.0.0"}, {Platforms: []string{"linux/arm64"}}} {
		pol, err := policy.Compile("reg.example/app", s)
		if err != nil {
			t.Fatal(err)
		}
		lookups := 0
		meta := func(context.Context, string) (policy.Metadata, error) {
			lookups++
			return policy.Metadata{Digest: "sha256:" + strings.Repeat("a", 64), Created: time.Now(),
				Platforms: []policy.Platform{{OS: "linux", Architecture: "arm64"}}}, nil
		}
		var m selectionMemo
		for range 2 {
			if _, err := m.selectTag(context.Background(), client, "reg.example/app", s, pol, tags, policy.Facts{Metadata: meta}); err != nil {
				t.Fatalf("%+v: %v", s, err)
			}
		}
		first := lookups / 2
		if first == 0 || lookups != 2*first {
			t.Errorf("spec %+v: %d metadata lookups over two selections, want the same number each time (not remembered)", s, lookups)
		}
	}
	if pol, _ := policy.Compile("reg.example/app", policy.Spec{Strategy: "alphabetical"}); pol.NeedsMetadata() {
		t.Error("an alphabetical policy reads metadata: it would not be remembered")
	}
}

// No spec passes for another: a separator inside a field is quoted.
func TestSelectionMemoSpecKeysDoNotCollide(t *testing.T) {
	a := keySum("app", policy.Spec{IgnoreTags: []string{"1.3.9\x001.3.8"}})
	b := keySum("app", policy.Spec{IgnoreTags: []string{"1.3.9", "1.3.8"}})
	c := keySum("app", policy.Spec{Constraint: "~1", AllowTags: ""})
	d := keySum("app", policy.Spec{Constraint: "", AllowTags: "~1"})
	e := keySum("app", policy.Spec{Strategy: "semver"})
	f := keySum("", policy.Spec{Strategy: "app", Constraint: "semver"})
	if a == b || c == d || e == f {
		t.Errorf("different specs share a key: %x / %x, %x / %x, %x / %x", a, b, c, d, e, f)
	}
}

// The memo keeps no spec's text: an annotation author may write patterns
// up to policy's limits (65 KiB of ignore-tags per image), and the memo
// holds up to maxSelectionMemo selections. 300 selections of such specs
// kept about 20 MiB in their keys.
func TestSelectionMemoKeysAreSmall(t *testing.T) {
	tags := []string{"1.0.0", "1.1.0", "2.0.0"}
	client := &registry.Client{}
	var m selectionMemo
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 300 {
		spec := policy.Spec{AllowTags: fmt.Sprintf("regexp:^1|%d%s", i, strings.Repeat("z", policy.MaxPatternBytes-20))}
		for j := range policy.MaxIgnoreTags {
			spec.IgnoreTags = append(spec.IgnoreTags, fmt.Sprintf("%d-%d-%s", i, j, strings.Repeat("y", policy.MaxPatternBytes-20)))
		}
		pol, err := policy.Compile("reg.example/app", spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.selectTag(t.Context(), client, "reg.example/app", spec, pol, tags, policy.Facts{}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if n := len(m.m); n != 300 {
		t.Fatalf("%d selections remembered, want 300", n)
	}
	if kept := int64(after.HeapAlloc) - int64(before.HeapAlloc); kept > 2<<20 {
		t.Errorf("the memo of 300 selections keeps %d KiB, want under 2 MiB: it keeps the specs' text", kept>>10)
	}
	runtime.KeepAlive(&m)
}
