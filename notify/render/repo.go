package render

import (
	"context"

	"github.com/crowsnest-dev/crowsnest/internal/repourl"
)

// RepoURLToHTTPS turns a Git repository URL (ssh://, scp-like, git://,
// http:// or https://) into its https:// browse URL without user info or a
// .git suffix, for links in messages. Anything it cannot read is returned
// unchanged.
func RepoURLToHTTPS(repoURL string) string { return repourl.ToHTTPS(repoURL) }

// FullNameByRepoURL returns a repository's path on its host ("org/repo"), as
// Argo CD's repo.FullNameByRepoURL does.
func FullNameByRepoURL(repoURL string) string { return repourl.FullName(repoURL) }

// RepoHelpers returns Argo CD's template helpers under the names its
// templates call them with (`{{call .repo.RepoURLToHTTPS .app.spec.source.repoURL}}`);
// callers put it in the render variables as "repo". GetCommitMetadata
// and GetAppDetails are there and fail the render (ErrNoRepoAccess):
// RepoHelpersFor answers them.
func RepoHelpers() map[string]any {
	return RepoHelpersFor(context.Background(), nil, nil)
}
