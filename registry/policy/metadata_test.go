package policy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSelectNewestBuild(t *testing.T) {
	runSelectCases(t, []selectCase{{
		name: "newest created wins",
		spec: Spec{Strategy: "newest-build"},
		tags: []string{"a", "b", "c"},
		md: map[string]Metadata{
			"a": image("sha256:a", t1, amd64),
			"b": image("sha256:b", t3, amd64),
			"c": image("sha256:c", t2, amd64),
		},
		wantCalls: []string{"a", "b", "c"},
		want: Result{Tag: "b", Digest: "sha256:b", Candidates: []Candidate{
			candAt("b", "", ReasonSelected, t3),
			candAt("c", "", ReasonOutranked, t2),
			candAt("a", "", ReasonOutranked, t1),
		}},
	}, {
		name: "equal times: lexically greater tag; unknown times last",
		spec: Spec{Strategy: "newest-build"},
		tags: []string{"x", "zz", "y"},
		md: map[string]Metadata{
			"x":  image("sha256:x", t2, amd64),
			"y":  image("sha256:y", t2, amd64),
			"zz": image("sha256:zz", time.Time{}, amd64),
		},
		wantCalls: []string{"x", "zz", "y"},
		want: Result{Tag: "y", Digest: "sha256:y", Candidates: []Candidate{
			candAt("y", "", ReasonSelected, t2),
			candAt("x", "", ReasonOutranked, t2),
			candAt("zz", "", ReasonOutranked, time.Time{}),
		}},
	}, {
		name: "latest alias: only wanted platforms count, filtered tags not looked up",
		spec: Spec{Strategy: "latest", Platforms: []string{"linux/arm64"}, IgnoreTags: []string{"skip-*"}},
		tags: []string{"x", "y", "z", "skip-me", "w"},
		md: map[string]Metadata{
			// x's newest child is amd64; for arm64 it is the oldest.
			"x": index("sha256:x", map[Platform]time.Time{amd64: t3, arm64v8: t1}),
			"y": image("sha256:y", t2, arm64v8),
			"z": image("sha256:z", t3, amd64),
			"w": image("sha256:w", t1, amd64),
		},
		wantCalls: []string{"x", "y", "z", "w"},
		want: Result{Tag: "y", Digest: "sha256:y", Candidates: []Candidate{
			candAt("z", "", ReasonPlatform, t3),
			candAt("y", "", ReasonSelected, t2),
			candAt("x", "", ReasonOutranked, t1),
			candAt("w", "", ReasonPlatform, t1), // below the winner, still shown
			cand("skip-me", "", ReasonIgnored),
		}},
	}})
}

func TestSelectPlatforms(t *testing.T) {
	runSelectCases(t, []selectCase{{
		name: "semver winner without the platform is skipped for the next best",
		spec: Spec{Platforms: []string{"linux/arm64"}},
		tags: []string{"1.0.0", "1.9.0", "2.0.0"},
		md: map[string]Metadata{
			"2.0.0": image("sha256:20", t3, amd64),
			"1.9.0": index("sha256:19", map[Platform]time.Time{amd64: t3, arm64v8: t2}),
			"1.0.0": image("sha256:10", t1, arm64),
		},
		wantCalls: []string{"2.0.0", "1.9.0"}, // 1.0.0 ranks below the winner
		want: Result{Tag: "1.9.0", Version: "1.9.0", Digest: "sha256:19", Candidates: []Candidate{
			candAt("2.0.0", "2.0.0", ReasonPlatform, t3),
			candAt("1.9.0", "1.9.0", ReasonSelected, t2),
			cand("1.0.0", "1.0.0", ReasonOutranked),
		}},
	}, {
		// argocd-image-updater (registry-scanner TagInfoFromReferences)
		// takes a tag with at least one reference for a wanted platform.
		name: "one wanted platform is enough",
		spec: Spec{Platforms: []string{"linux/amd64", "linux/arm64"}},
		tags: []string{"1.0.0", "1.1.0", "1.2.0"},
		md: map[string]Metadata{
			"1.2.0": image("sha256:12", t3, armv6),
			"1.1.0": image("sha256:11", t2, amd64),
			"1.0.0": index("sha256:10", map[Platform]time.Time{amd64: t1, arm64: t2}),
		},
		wantCalls: []string{"1.2.0", "1.1.0"},
		want: Result{Tag: "1.1.0", Version: "1.1.0", Digest: "sha256:11", Candidates: []Candidate{
			candAt("1.2.0", "1.2.0", ReasonPlatform, t3),
			candAt("1.1.0", "1.1.0", ReasonSelected, t2),
			cand("1.0.0", "1.0.0", ReasonOutranked),
		}},
	}, {
		name: "a wanted variant must match; unknown platforms never qualify",
		spec: Spec{Strategy: "alphabetical", Platforms: []string{"linux/arm/v7"}},
		tags: []string{"a", "b"},
		md: map[string]Metadata{
			"b": image("sha256:b", t1, armv6),
			"a": {Digest: "sha256:a"},
		},
		wantCalls: []string{"b", "a"},
		wantErr:   ErrNoCandidate,
		want: Result{Candidates: []Candidate{
			candAt("b", "b", ReasonPlatform, t1),
			cand("a", "a", ReasonPlatform),
		}},
	}})
}

func TestSelectDigest(t *testing.T) {
	latest := index("sha256:idx", map[Platform]time.Time{amd64: t1, arm64: t2})
	runSelectCases(t, []selectCase{{
		name:      "tracks the tag without a tag list",
		spec:      Spec{Strategy: "digest", Constraint: "latest"},
		md:        map[string]Metadata{"latest": latest},
		wantCalls: []string{"latest"},
		want: Result{Tag: "latest", Digest: "sha256:idx", Pinned: true, Candidates: []Candidate{
			candAt("latest", "", ReasonSelected, t2),
		}},
	}, {
		name:      "tracked tag in the list, with platforms",
		spec:      Spec{Strategy: "digest", Constraint: "latest", Platforms: []string{"linux/arm64"}},
		tags:      []string{"1.0", "latest"},
		md:        map[string]Metadata{"latest": latest},
		wantCalls: []string{"latest"},
		want: Result{Tag: "latest", Digest: "sha256:idx", Pinned: true, Candidates: []Candidate{
			candAt("latest", "", ReasonSelected, t2),
		}},
	}, {
		name:    "tracked tag missing from the list",
		spec:    Spec{Strategy: "digest", Constraint: "latest"},
		tags:    []string{"1.0"},
		wantErr: ErrNoCandidate,
		want:    Result{Candidates: []Candidate{cand("latest", "", ReasonNotFound)}},
	}, {
		name:      "tracked tag not built for the platform",
		spec:      Spec{Strategy: "digest", Constraint: "main", Platforms: []string{"linux/arm64"}},
		md:        map[string]Metadata{"main": image("sha256:m", t1, amd64)},
		wantCalls: []string{"main"},
		wantErr:   ErrNoCandidate,
		want:      Result{Candidates: []Candidate{candAt("main", "", ReasonPlatform, t1)}},
	}})
}

func TestSelectErrors(t *testing.T) {
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	failing := func(context.Context, string) (Metadata, error) { return Metadata{}, errUnknownTag }
	noDigest := func(context.Context, string) (Metadata, error) { return Metadata{Platforms: []Platform{amd64}}, nil }
	tests := []struct {
		name    string
		spec    Spec
		ctx     context.Context
		meta    MetadataFunc
		tags    []string
		wantIs  error
		wantMsg string
	}{{
		name:    "metadata error is wrapped",
		spec:    Spec{Strategy: "newest-build"},
		meta:    failing,
		tags:    []string{"a"},
		wantIs:  errUnknownTag,
		wantMsg: `image "example.com/app": reading metadata of tag "a": unknown tag`,
	}, {
		name:    "cancellation stops the walk",
		spec:    Spec{Platforms: []string{"linux/amd64"}},
		ctx:     cancelled,
		meta:    failing,
		tags:    []string{"1.0"},
		wantIs:  context.Canceled,
		wantMsg: `image "example.com/app": selecting a tag: context canceled`,
	}, {
		name:    "metadata needed but not given",
		spec:    Spec{Strategy: "digest", Constraint: "latest"},
		wantMsg: `image "example.com/app": the digest policy needs metadata, but no lookup was given`,
	}, {
		name:    "digest strategy without a digest",
		spec:    Spec{Strategy: "digest", Constraint: "latest"},
		meta:    noDigest,
		wantIs:  errNoDigest,
		wantMsg: `image "example.com/app": reading metadata of tag "latest": no digest`,
	}, {
		name:    "nothing qualifies says why",
		spec:    Spec{Constraint: "~1.2"},
		tags:    []string{"2.0.0", "x", "1.3.0"},
		wantIs:  ErrNoCandidate,
		wantMsg: `image "example.com/app": no tag qualifies (3 tags: 1 not a semantic version, 2 outside the constraint)`,
	}, {
		name:    "no tags",
		wantIs:  ErrNoCandidate,
		wantMsg: `image "example.com/app": no tag qualifies (no tags)`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			_, err := mustCompile(t, tc.spec).Select(ctx, tc.tags, tc.meta)
			if err == nil {
				t.Fatal("Select succeeded, want an error")
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("Select error %v is not %v", err, tc.wantIs)
			}
			if diff := cmp.Diff(tc.wantMsg, err.Error()); diff != "" {
				t.Errorf("Select error message (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSelectIgnoresTagOrder checks the documented tie-breaks: every
// rotation of the same tags gives the same account.
func TestSelectIgnoresTagOrder(t *testing.T) {
	tags := strings.Fields("1.2.3 v1.2.3 1.2 1.2.0 v1.2.0+b 1.2.0+a 1.2.3-rc.1 x 01.2.3")
	for _, spec := range []Spec{{}, {Strategy: "alphabetical"}, {Extract: `(?P<version>\d+)$`, ExtractOrder: "numeric"}} {
		p := mustCompile(t, spec)
		want, err := p.Explain(t.Context(), tags, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(tags); i++ {
			rotated := append(append([]string(nil), tags[i:]...), tags[:i]...)
			got, err := p.Explain(t.Context(), rotated, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("spec %+v, rotation %d (-want +got):\n%s", spec, i, diff)
			}
		}
	}
}

// The winner's source revision and repository travel in the Result when
// its metadata was read; a loser's never do.
func TestSelectCarriesProvenance(t *testing.T) {
	described := func(md Metadata, rev string) Metadata {
		md.Revision, md.Source = rev, "https://github.com/team-a/app"
		return md
	}
	runSelectCases(t, []selectCase{{
		name: "platforms: the winner's",
		spec: Spec{Platforms: []string{"linux/arm64"}},
		tags: []string{"1.0.0", "2.0.0"},
		md: map[string]Metadata{
			"2.0.0": described(image("sha256:20", t2, amd64), "bbb"),
			"1.0.0": described(image("sha256:10", t1, arm64), "aaa"),
		},
		wantCalls: []string{"2.0.0", "1.0.0"},
		want: Result{Tag: "1.0.0", Version: "1.0.0", Digest: "sha256:10", Revision: "aaa", Source: "https://github.com/team-a/app",
			Candidates: []Candidate{
				candAt("2.0.0", "2.0.0", ReasonPlatform, t2),
				candAt("1.0.0", "1.0.0", ReasonSelected, t1),
			}},
	}, {
		name:      "digest",
		spec:      Spec{Strategy: "digest", Constraint: "latest"},
		tags:      []string{"latest"},
		md:        map[string]Metadata{"latest": described(image("sha256:l", t1, amd64), "ccc")},
		wantCalls: []string{"latest"},
		want: Result{Tag: "latest", Digest: "sha256:l", Pinned: true, Revision: "ccc", Source: "https://github.com/team-a/app",
			Candidates: []Candidate{candAt("latest", "", ReasonSelected, t1)}},
	}})
}
