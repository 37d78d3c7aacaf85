package policy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

var (
	t1 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 = t1.Add(24 * time.Hour)
	t3 = t2.Add(24 * time.Hour)

	amd64   = Platform{OS: "linux", Architecture: "amd64"}
	arm64   = Platform{OS: "linux", Architecture: "arm64"}
	arm64v8 = Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
	armv6   = Platform{OS: "linux", Architecture: "arm", Variant: "v6"}
)

var errUnknownTag = errors.New("unknown tag")

// fakeRegistry serves metadata from a map and records which tags were
// asked for, in order.
type fakeRegistry struct {
	md    map[string]Metadata
	mu    sync.Mutex
	calls []string
}

func (f *fakeRegistry) lookup(_ context.Context, tag string) (Metadata, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, tag)
	md, ok := f.md[tag]
	if !ok {
		return Metadata{}, fmt.Errorf("tag %q: %w", tag, errUnknownTag)
	}
	return md, nil
}

// image is a single-platform image's metadata.
func image(digest string, created time.Time, p Platform) Metadata {
	return Metadata{Digest: digest, Created: created, Platforms: []Platform{p}}
}

// index is a multi-arch index's metadata, children created at the given
// times.
func index(digest string, children map[Platform]time.Time) Metadata {
	md := Metadata{Digest: digest, CreatedByPlatform: children}
	for p, t := range children {
		md.Platforms = append(md.Platforms, p)
		if t.After(md.Created) {
			md.Created = t
		}
	}
	return md
}

func mustCompile(tb testing.TB, s Spec) *Policy {
	tb.Helper()
	p, err := Compile("example.com/app", s)
	if err != nil {
		tb.Fatalf("Compile(%+v): %v", s, err)
	}
	return p
}

// cand builds an expected Candidate.
func cand(tag, version string, r Reason) Candidate {
	return Candidate{Tag: tag, Version: version, Reason: r}
}

// candAt is cand with the created time read from metadata.
func candAt(tag, version string, r Reason, created time.Time) Candidate {
	return Candidate{Tag: tag, Version: version, Reason: r, Created: created}
}
