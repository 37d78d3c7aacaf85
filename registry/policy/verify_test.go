package policy

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVerifyFilter checks signatures as a tag filter: checked lazily best
// first, only until one passes, refused tags named with the verifier's
// reason, for ranked strategies and for digest.
func TestVerifyFilter(t *testing.T) {
	reg := &fakeRegistry{md: map[string]Metadata{
		"1.0.0": {Digest: "sha256:10"}, "1.1.0": {Digest: "sha256:11"},
		"1.2.0": {Digest: "sha256:12"}, "latest": {Digest: "sha256:12"},
	}}
	refused := map[string]string{"sha256:12": "no cosign signature"}
	var checked []string
	verifyFn := func(_ context.Context, d string) (string, error) {
		checked = append(checked, d)
		return refused[d], nil
	}
	facts := Facts{Metadata: reg.lookup, Verify: verifyFn}
	pol, err := Compile("app", Spec{Strategy: "semver"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := pol.SelectWith(t.Context(), []string{"1.0.0", "1.1.0", "1.2.0"}, facts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tag != "1.1.0" || res.Digest != "sha256:11" {
		t.Errorf("selected %s@%s, want 1.1.0@sha256:11", res.Tag, res.Digest)
	}
	if diff := cmp.Diff([]string{"sha256:12", "sha256:11"}, checked); diff != "" {
		t.Errorf("digests checked (-want +got):\n%s", diff)
	}
	wantUnverified := []Candidate{{Tag: "1.2.0", Version: "1.2.0", Reason: ReasonUnverified, Detail: "no cosign signature"}}
	if diff := cmp.Diff(wantUnverified, res.Unverified); diff != "" {
		t.Errorf("Unverified (-want +got):\n%s", diff)
	}

	res, err = pol.ExplainWith(t.Context(), []string{"1.0.0", "1.1.0", "1.2.0"}, facts)
	if err != nil {
		t.Fatal(err)
	}
	wantCandidates := []Candidate{
		{Tag: "1.2.0", Version: "1.2.0", Reason: ReasonUnverified, Detail: "no cosign signature"},
		{Tag: "1.1.0", Version: "1.1.0", Reason: ReasonSelected},
		{Tag: "1.0.0", Version: "1.0.0", Reason: ReasonOutranked},
	}
	if diff := cmp.Diff(wantCandidates, res.Candidates); diff != "" {
		t.Errorf("Explain candidates (-want +got):\n%s", diff)
	}

	digest, err := Compile("app", Spec{Strategy: "digest", Constraint: "latest"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = digest.SelectWith(t.Context(), nil, facts)
	if !errors.Is(err, ErrNoCandidate) {
		t.Errorf("digest of an unsigned tag: err = %v, want ErrNoCandidate", err)
	}

	failing := Facts{Metadata: reg.lookup, Verify: func(context.Context, string) (string, error) { return "", errUnknownTag }}
	if _, err := pol.SelectWith(t.Context(), []string{"1.0.0"}, failing); !errors.Is(err, errUnknownTag) {
		t.Errorf("verifier error: err = %v, want it returned", err)
	}
	if _, err := pol.SelectWith(t.Context(), []string{"1.0.0"}, Facts{Verify: verifyFn}); err == nil {
		t.Error("verifying without a metadata lookup: want an error")
	}
}
