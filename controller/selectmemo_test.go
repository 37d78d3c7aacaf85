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
		res, err := m.selectTag(ctx, client, "reg.example/app", spec, pol, tags, nil)
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
	if res, err := m.selectTag(ctx, client, "reg.example/app", other, pol2, relisted, nil); err != nil || res.Tag != "1.2.9" {
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
			if _, err := m.selectTag(context.Background(), client, "reg.example/app", s, pol, tags, meta); err != nil {
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
	a := specKey(policy.Spec{IgnoreTags: []string{"1.3.9\x001.3.8"}})
	b := specKey(policy.Spec{IgnoreTags: []string{"1.3.9", "1.3.8"}})
	c := specKey(policy.Spec{Constraint: "~1", AllowTags: ""})
	d := specKey(policy.Spec{Constraint: "", AllowTags: "~1"})
	if a == b || c == d {
		t.Errorf("different specs share a key: %q / %q, %q / %q", a, b, c, d)
	}
}
