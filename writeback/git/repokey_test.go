package git_test

import (
	"testing"

	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// Every spelling of one repository has one key; other repositories,
// hosts and ports keep theirs.
func TestRepoKey(t *testing.T) {
	same := [][]string{
		{"https://git.example.com/org/repo", "https://Git.Example.com/org/repo.git/", "https://bot:t0ken@git.example.com/org/repo.git", " https://git.example.com/org/repo/ "},
		{"ssh://git@host/org/repo", "git@host:org/repo.git", "ssh://git@host:22/org/repo", "git+ssh://git@host/org/repo"},
	}
	for _, group := range same {
		for _, u := range group[1:] {
			if got, want := gitwb.RepoKey(u), gitwb.RepoKey(group[0]); got != want {
				t.Errorf("RepoKey(%q) = %q, want %q (as %q)", u, got, want, group[0])
			}
		}
	}
	for _, pair := range [][2]string{
		{"https://git.example.com/org/repo", "https://git.example.com/org/repo2"},
		{"https://git.example.com/org/repo", "https://git.example.com.evil.io/org/repo"},
		{"ssh://git@host/org/repo", "ssh://git@host:2222/org/repo"},
	} {
		if gitwb.RepoKey(pair[0]) == gitwb.RepoKey(pair[1]) {
			t.Errorf("%q and %q share a key", pair[0], pair[1])
		}
	}
}
