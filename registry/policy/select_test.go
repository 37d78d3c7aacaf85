package policy

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type selectCase struct {
	name      string
	spec      Spec
	tags      []string
	md        map[string]Metadata
	want      Result
	wantCalls []string
	wantErr   error
}

// runSelectCases checks Explain against want, and that Select picks the
// same tag with the same metadata lookups, without the candidate list.
func runSelectCases(t *testing.T, cases []selectCase) {
	t.Helper()
	for i := range cases {
		tc := &cases[i]
		t.Run(tc.name, func(t *testing.T) {
			p := mustCompile(t, tc.spec)
			reg := &fakeRegistry{md: tc.md}
			got, err := p.Explain(t.Context(), tc.tags, reg.lookup)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("Explain error = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Explain result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCalls, reg.calls); diff != "" {
				t.Errorf("Explain metadata lookups (-want +got):\n%s", diff)
			}

			reg = &fakeRegistry{md: tc.md}
			got, err = p.Select(t.Context(), tc.tags, reg.lookup)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("Select error = %v, want %v", err, tc.wantErr)
			}
			want := tc.want
			want.Candidates = nil
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Select result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCalls, reg.calls); diff != "" {
				t.Errorf("Select metadata lookups (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectSemver(t *testing.T) {
	runSelectCases(t, []selectCase{{
		name: "highest release wins, unparseable skipped",
		tags: []string{"1.0.0", "1.2.0", "1.10.0", "latest", "v1.9.9"},
		want: Result{Tag: "1.10.0", Version: "1.10.0", Candidates: []Candidate{
			cand("1.10.0", "1.10.0", ReasonSelected),
			cand("v1.9.9", "1.9.9", ReasonOutranked),
			cand("1.2.0", "1.2.0", ReasonOutranked),
			cand("1.0.0", "1.0.0", ReasonOutranked),
			cand("latest", "", ReasonNotSemver),
		}},
	}, {
		name: "tilde range",
		spec: Spec{Strategy: "semver", Constraint: "~1.2"},
		tags: []string{"1.2.0", "1.2.5", "1.3.0", "2.0.0"},
		want: Result{Tag: "1.2.5", Version: "1.2.5", Candidates: []Candidate{
			cand("2.0.0", "2.0.0", ReasonConstraint),
			cand("1.3.0", "1.3.0", ReasonConstraint),
			cand("1.2.5", "1.2.5", ReasonSelected),
			cand("1.2.0", "1.2.0", ReasonOutranked),
		}},
	}, {
		name: "prereleases excluded without constraint",
		tags: []string{"1.0.0", "1.1.0-rc.1"},
		want: Result{Tag: "1.0.0", Version: "1.0.0", Candidates: []Candidate{
			cand("1.1.0-rc.1", "1.1.0-rc.1", ReasonPrerelease),
			cand("1.0.0", "1.0.0", ReasonSelected),
		}},
	}, {
		name: "prerelease in range only when the constraint names one",
		spec: Spec{Constraint: "^1.0"},
		tags: []string{"1.4.0", "1.5.0-rc.1", "2.0.0-rc.1"},
		want: Result{Tag: "1.4.0", Version: "1.4.0", Candidates: []Candidate{
			cand("2.0.0-rc.1", "2.0.0-rc.1", ReasonConstraint),
			cand("1.5.0-rc.1", "1.5.0-rc.1", ReasonPrerelease),
			cand("1.4.0", "1.4.0", ReasonSelected),
		}},
	}, {
		name: "constraint naming a prerelease admits prereleases",
		spec: Spec{Constraint: ">=1.1.0-rc.0"},
		tags: []string{"1.0.0", "1.1.0-rc.1", "1.1.0-rc.2"},
		want: Result{Tag: "1.1.0-rc.2", Version: "1.1.0-rc.2", Candidates: []Candidate{
			cand("1.1.0-rc.2", "1.1.0-rc.2", ReasonSelected),
			cand("1.1.0-rc.1", "1.1.0-rc.1", ReasonOutranked),
			cand("1.0.0", "1.0.0", ReasonConstraint),
		}},
	}, {
		name: "equal versions: lexically greater tag wins",
		tags: []string{"1.2.3", "v1.2.3", "1.0.0+a", "1.0.0+b"},
		want: Result{Tag: "v1.2.3", Version: "1.2.3", Candidates: []Candidate{
			cand("v1.2.3", "1.2.3", ReasonSelected),
			cand("1.2.3", "1.2.3", ReasonOutranked),
			// Build metadata needs '+', which OCI tags cannot hold.
			cand("1.0.0+b", "", ReasonInvalidTag),
			cand("1.0.0+a", "", ReasonInvalidTag),
		}},
	}, {
		name: "short versions and leading v",
		tags: []string{"1.9", "v2", "2.0.1-0"},
		want: Result{Tag: "v2", Version: "2.0.0", Candidates: []Candidate{
			cand("2.0.1-0", "2.0.1-0", ReasonPrerelease),
			cand("v2", "2.0.0", ReasonSelected),
			cand("1.9", "1.9.0", ReasonOutranked),
		}},
	}, {
		name:    "nothing parses",
		tags:    []string{"abc", "1.2.3.4", "", "V1.0.0"},
		wantErr: ErrNoCandidate,
		want: Result{Candidates: []Candidate{
			cand("abc", "", ReasonNotSemver),
			cand("V1.0.0", "", ReasonNotSemver),
			cand("1.2.3.4", "", ReasonNotSemver),
			cand("", "", ReasonInvalidTag),
		}},
	}, {
		name:    "no tags",
		wantErr: ErrNoCandidate,
	}})
}

func TestSelectFilters(t *testing.T) {
	runSelectCases(t, []selectCase{{
		name: "allow-tags regexp",
		spec: Spec{AllowTags: `regexp:^1\.`, IgnoreTags: []string{"2.*"}},
		tags: []string{"1.0.0", "1.1.0", "2.0.0"},
		want: Result{Tag: "1.1.0", Version: "1.1.0", Candidates: []Candidate{
			cand("1.1.0", "1.1.0", ReasonSelected),
			cand("1.0.0", "1.0.0", ReasonOutranked),
			cand("2.0.0", "", ReasonNotAllowed), // allow-tags is checked first
		}},
	}, {
		name: "allow-tags any",
		spec: Spec{AllowTags: "any"},
		tags: []string{"1.0.0"},
		want: Result{Tag: "1.0.0", Version: "1.0.0", Candidates: []Candidate{cand("1.0.0", "1.0.0", ReasonSelected)}},
	}, {
		name: "ignore-tags globs, literal and regexp",
		spec: Spec{IgnoreTags: []string{"*-rc*", "1.5.0", `regexp:^0\.`}},
		tags: []string{"1.6.0-rc1", "1.5.0", "0.9.0", "1.4.0", "1.3.0"},
		want: Result{Tag: "1.4.0", Version: "1.4.0", Candidates: []Candidate{
			cand("1.4.0", "1.4.0", ReasonSelected),
			cand("1.3.0", "1.3.0", ReasonOutranked),
			cand("1.6.0-rc1", "", ReasonIgnored),
			cand("1.5.0", "", ReasonIgnored),
			cand("0.9.0", "", ReasonIgnored),
		}},
	}, {
		name:    "everything filtered",
		spec:    Spec{IgnoreTags: []string{"*"}},
		tags:    []string{"1.0.0"},
		wantErr: ErrNoCandidate,
		want:    Result{Candidates: []Candidate{cand("1.0.0", "", ReasonIgnored)}},
	}})
}

func TestSelectExtract(t *testing.T) {
	runSelectCases(t, []selectCase{{
		name: "numeric: integers of any length",
		spec: Spec{Extract: `^build-(?P<version>\d+)$`, ExtractOrder: "numeric"},
		tags: []string{"build-9", "build-10", "build-100000000000000000000000", "build-x", "release"},
		want: Result{Tag: "build-100000000000000000000000", Version: "100000000000000000000000", Candidates: []Candidate{
			cand("build-100000000000000000000000", "100000000000000000000000", ReasonSelected),
			cand("build-10", "10", ReasonOutranked),
			cand("build-9", "9", ReasonOutranked),
			cand("release", "", ReasonNoExtractMatch),
			cand("build-x", "", ReasonNoExtractMatch),
		}},
	}, {
		name: "numeric: leading zeros tie, non-numbers skipped",
		spec: Spec{Extract: `^b-(?P<version>.+)$`, ExtractOrder: "numeric"},
		tags: []string{"b-007", "b-7", "b-x1"},
		want: Result{Tag: "b-7", Version: "7", Candidates: []Candidate{
			cand("b-7", "7", ReasonSelected),
			cand("b-007", "007", ReasonOutranked),
			cand("b-x1", "", ReasonNotNumeric),
		}},
	}, {
		name: "semver of the extracted value, with constraint",
		spec: Spec{Extract: `^app-(?P<version>.+)$`, Constraint: "<1.10"},
		tags: []string{"app-1.2.0", "app-1.10.0", "app-foo", "other-2.0.0"},
		want: Result{Tag: "app-1.2.0", Version: "1.2.0", Candidates: []Candidate{
			cand("app-1.10.0", "1.10.0", ReasonConstraint),
			cand("app-1.2.0", "1.2.0", ReasonSelected),
			cand("other-2.0.0", "", ReasonNoExtractMatch),
			cand("app-foo", "", ReasonNotSemver),
		}},
	}, {
		name: "semver is the default order for the semver strategy",
		spec: Spec{Extract: `^build-(?P<version>\d+)$`},
		tags: []string{"build-9", "build-10"},
		want: Result{Tag: "build-10", Version: "10.0.0", Candidates: []Candidate{
			cand("build-10", "10.0.0", ReasonSelected),
			cand("build-9", "9.0.0", ReasonOutranked),
		}},
	}, {
		name: "lexical calver with alphabetical",
		spec: Spec{Strategy: "alphabetical", Extract: `(?P<version>\d{4}-\d{2}-\d{2})`},
		tags: []string{"nightly-2024-01-31", "nightly-2024-02-01", "release-2023-12-31", "foo"},
		want: Result{Tag: "nightly-2024-02-01", Version: "2024-02-01", Candidates: []Candidate{
			cand("nightly-2024-02-01", "2024-02-01", ReasonSelected),
			cand("nightly-2024-01-31", "2024-01-31", ReasonOutranked),
			cand("release-2023-12-31", "2023-12-31", ReasonOutranked),
			cand("foo", "", ReasonNoExtractMatch),
		}},
	}, {
		name: "an unmatched optional group is no match",
		spec: Spec{Extract: `^a(?P<version>\d+)?$`, ExtractOrder: "numeric"},
		tags: []string{"a", "a1"},
		want: Result{Tag: "a1", Version: "1", Candidates: []Candidate{
			cand("a1", "1", ReasonSelected),
			cand("a", "", ReasonNoExtractMatch),
		}},
	}})
}

func TestSelectAlphabetical(t *testing.T) {
	for _, strategy := range []string{"alphabetical", "name"} {
		runSelectCases(t, []selectCase{{
			name: strategy,
			spec: Spec{Strategy: strategy},
			tags: []string{"a", "10", "b", "9"},
			want: Result{Tag: "b", Version: "b", Candidates: []Candidate{
				cand("b", "b", ReasonSelected),
				cand("a", "a", ReasonOutranked),
				cand("9", "9", ReasonOutranked),
				cand("10", "10", ReasonOutranked),
			}},
		}})
	}
}

func TestResultRef(t *testing.T) {
	tests := []struct {
		name string
		r    Result
		want string
	}{
		{"tag", Result{Tag: "1.0"}, "1.0"},
		{"digest known but not pinned", Result{Tag: "1.0", Digest: "sha256:a"}, "1.0"},
		{"pinned", Result{Tag: "latest", Digest: "sha256:a", Pinned: true}, "latest@sha256:a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.r.Ref()); diff != "" {
				t.Errorf("Ref() (-want +got):\n%s", diff)
			}
		})
	}
}
