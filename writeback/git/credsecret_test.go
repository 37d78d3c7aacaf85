package git

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
)

// secretCreds answers with the credentials of the Secret a batch names.
type secretCreds struct {
	mu    sync.Mutex
	asked []string
	by    map[string]Credentials
}

func (s *secretCreds) Credentials(ctx context.Context, _ string) (Credentials, bool, error) {
	secret := CredentialsSecret(ctx)
	s.mu.Lock()
	s.asked = append(s.asked, secret)
	s.mu.Unlock()
	c, ok := s.by[secret]
	return c, ok, nil
}

// Two Applications writing to one repository and branch, one naming its
// own Secret (git:secret:) and one not: they are two pushes, each with
// its own credentials. Before, the first Application's Secret became the
// repository's and pushed the other's change too.
func TestChangesNamingDifferentSecretsArePushedApart(t *testing.T) {
	const password = "team-a-token"
	s, url := seeded(t, testgit.Options{Username: "team-a", Password: password})
	creds := &secretCreds{by: map[string]Credentials{"team-a/git": {Username: "team-a", Password: password}}}
	w := newWriter(t, creds)
	a := kustomizeWeb(url, "1.2.0")
	a.Key, a.CredentialsSecret = "team-a/web", "team-a/git"
	b := kustomizeWeb(url, "1.2.0", "3.0.0")
	b.Key, b.App = "team-b/api", "api"
	res, _ := w.Apply(t.Context(), []Change{a, b})
	if len(res) != 2 {
		t.Fatalf("%d results, want one push per Secret: %+v", len(res), res)
	}
	got := map[string]bool{}
	for _, r := range res {
		for _, k := range r.Keys {
			got[k] = r.Err == nil && r.CommitSHA != ""
		}
	}
	// team-a's Secret pushes team-a's change; team-b's, with no Secret
	// of its own, is refused by the server that wants credentials.
	if diff := cmp.Diff(map[string]bool{"team-a/web": true, "team-b/api": false}, got); diff != "" {
		t.Errorf("pushed per Application (-want +got):\n%s", diff)
	}
	creds.mu.Lock()
	asked := slices.Sorted(slices.Values(creds.asked))
	creds.mu.Unlock()
	if diff := cmp.Diff([]string{"", "team-a/git"}, asked); diff != "" {
		t.Errorf("Secrets the batches asked for (-want +got):\n%s", diff)
	}
	if n := len(s.Log(t, "apps", "main")); n != 2 {
		t.Errorf("%d commits on main, want the seed and team-a's", n)
	}
}
