package git

import (
	"context"
	"errors"
	"slices"
	"strings"
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

// Two Applications writing to one repository and branch, each with its
// own credentials in its repoURL (https://user:token@...), and a third
// with none: each change is pushed with the credentials of its own URL,
// or none. Before, the batch took whichever URL carried credentials, so
// team-a's token pushed team-b's change (and team-c's) too.
func TestCredentialsInTheURLPushOnlyTheirOwnChange(t *testing.T) {
	s, url := seeded(t, testgit.Options{Accounts: map[string]string{"alice": "team-a-token", "bob": "team-b-token"}})
	withUser := func(user, token string) string { return strings.Replace(url, "://", "://"+user+":"+token+"@", 1) }
	w := newWriter(t, nil)
	// Each changes an image of its own in one kustomization.
	change := func(key, repoURL, image, tag string) Change {
		c := kustomizeWeb(repoURL)
		_, app, _ := strings.Cut(key, "/")
		c.Key, c.App, c.Images = key, app, []Image{{Name: image, NewTag: tag}}
		return c
	}
	a := change("team-a/web", withUser("alice", "team-a-token"), "ghcr.io/acme/web", "1.2.0")
	b := change("team-b/api", withUser("bob", "team-b-token"), "ghcr.io/acme/api", "3.0.0")
	c := change("team-c/cache", url, "redis", "7.0")
	res, err := w.Apply(t.Context(), []Change{a, b, c})
	if !errors.Is(err, ErrAuth) || strings.Contains(err.Error(), "-token") {
		t.Errorf("Apply error = %v, want team-c's ErrAuth without any token", err)
	}
	commits := map[string]string{} // Key -> commit, or the error's kind
	for i := range res {
		r := &res[i]
		for _, k := range r.Keys {
			switch {
			case errors.Is(r.Err, ErrAuth):
				commits[k] = "refused"
			case r.Err != nil:
				commits[k] = r.Err.Error()
			default:
				commits[k] = r.CommitSHA
			}
		}
	}
	pushedBy := map[string]string{} // user -> the head of main its push left
	for _, p := range s.Pushes() {
		for _, h := range p.Heads {
			if sha, ok := strings.CutPrefix(h, "main "); ok {
				pushedBy[p.User] = sha
			}
		}
	}
	want := map[string]string{"team-a/web": pushedBy["alice"], "team-b/api": pushedBy["bob"], "team-c/cache": "refused"}
	if diff := cmp.Diff(want, commits); diff != "" {
		t.Errorf("outcome per Application (-want +got):\n%s", diff)
	}
	if len(pushedBy) != 2 || pushedBy["alice"] == pushedBy["bob"] {
		t.Errorf("pushes by user %v, want one by alice and one by bob", pushedBy)
	}
	if n := len(s.Log(t, "apps", "main")); n != 3 {
		t.Errorf("%d commits on main, want the seed, team-a's and team-b's", n)
	}
}
