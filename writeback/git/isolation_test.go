package git

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

// outcome is what one Application got from an Apply, as a test compares
// it: its commit (or none) and whether it failed as an invalid change.
type outcome struct {
	Commit  string
	Invalid bool
}

// outcomes maps each Key the results name to its outcome.
func outcomes(res []Result) map[string]outcome {
	out := map[string]outcome{}
	for i := range res {
		r := &res[i]
		failed := map[string]bool{}
		for _, f := range r.Failed {
			failed[f.Key] = errors.Is(f, ErrInvalidChange)
		}
		for _, k := range r.Keys {
			o := outcome{Invalid: failed[k] || errors.Is(r.Err, ErrInvalidChange)}
			if r.Err == nil && !failed[k] {
				o.Commit = r.CommitSHA
			}
			out[k] = o
		}
	}
	return out
}

// One Application's branch that cannot be read or rendered fails that
// Application's change only: another team's change to the same
// repository, in the same Apply, is committed and pushed. Before, the
// whole Apply failed and every Application in it with the bad one's
// error.
func TestBadBranchFailsOnlyItsOwnChange(t *testing.T) {
	tests := []struct {
		name, branch string
	}{
		{"dots", "a..b"},
		{"helm range as the branch", "1.*"},
		{"space in the base", "main branch:x"},
		{"template that fails to render", "main:upd-{{(index .Images 5).NewTag}}"},
		{"template rendering an invalid name", "main:upd-{{.AppName}}..x"},
		{"template with a missing field", "main:{{.Nope}}"},
		{"empty target", "main:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := seeded(t, testgit.Options{})
			w := newWriter(t, nil)
			good := kustomizeWeb(url, "1.2.0")
			good.Key = "team-a/web"
			bad := kustomizeWeb(url, "9.9.9")
			bad.Key, bad.App, bad.Branch = "team-b/evil", "evil", tt.branch
			res, err := w.Apply(t.Context(), []Change{bad, good})
			if !errors.Is(err, ErrInvalidChange) {
				t.Errorf("Apply error = %v, want the bad change's ErrInvalidChange", err)
			}
			want := map[string]outcome{
				"team-a/web":  {Commit: s.Head(t, "apps", "main")},
				"team-b/evil": {Invalid: true},
			}
			if diff := cmp.Diff(want, outcomes(res)); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if n := len(s.Log(t, "apps", "main")); n != 2 {
				t.Errorf("%d commits on main, want the seed and team-a's", n)
			}
			plans, err := w.Plan(t.Context(), []Change{bad, good})
			if !errors.Is(err, ErrInvalidChange) || len(plans) != 2 {
				t.Fatalf("Plan = %d plans, %v; want the good one's and the bad one's failure", len(plans), err)
			}
			for _, p := range plans {
				if bad := p.Keys[0] == "team-b/evil"; bad != errors.Is(p.Err, ErrInvalidChange) {
					t.Errorf("plan for %v: error %v", p.Keys, p.Err)
				}
			}
		})
	}
}
