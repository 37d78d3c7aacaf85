package git

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

// projectCreds answers with the credentials of the AppProject a batch is
// for, as Argo CD's project-scoped repository Secrets do.
type projectCreds map[string]Credentials

func (p projectCreds) Credentials(ctx context.Context, _ string) (Credentials, bool, error) {
	c, ok := p[Project(ctx)]
	return c, ok, nil
}

// Two Applications of different AppProjects writing to one repository and
// branch: one project has a repository Secret scoped to it, the other
// none. They are two pushes: the scoped Secret pushes only its project's
// change. Before, both changes were one batch pushed with whichever
// credentials the lookup found, so one project's Secret pushed the
// other's change.
func TestChangesOfDifferentProjectsArePushedApart(t *testing.T) {
	const password = "team-a-token"
	s, url := seeded(t, testgit.Options{Username: "team-a", Password: password})
	w := newWriter(t, projectCreds{"team-a": {Username: "team-a", Password: password}})
	a := kustomizeWeb(url, "1.2.0")
	a.Key, a.Project = "argocd/web", "team-a"
	b := kustomizeWeb(url, "1.2.0", "3.0.0")
	b.Key, b.App, b.Project = "argocd/api", "api", "team-b"
	res, _ := w.Apply(t.Context(), []Change{a, b})
	got := map[string]bool{}
	for _, r := range res {
		for _, k := range r.Keys {
			got[k] = r.Err == nil && r.CommitSHA != ""
		}
	}
	if diff := cmp.Diff(map[string]bool{"argocd/web": true, "argocd/api": false}, got); diff != "" {
		t.Errorf("pushed per Application (-want +got):\n%s", diff)
	}
	if log := s.Log(t, "apps", "main"); len(log) != 2 {
		t.Errorf("%d commits, want the seed and team-a's: %+v", len(log), log)
	}
}
