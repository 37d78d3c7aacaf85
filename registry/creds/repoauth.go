package creds

import (
	"context"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/crowsnest-dev/crowsnest/config"
)

// RepoAuth supplies credentials per repository, the shape the registry
// client asks for (Authenticator(ctx, repo) and Invalidate(repo), repo as
// "ghcr.io/team-a/app"): Registries names the reference and expiry
// configured for a repository, so images on one host can use different
// credentials.
type RepoAuth struct {
	Resolver   *Resolver
	Registries Registries
}

// Registries names the credentials configured for a repository
// (setup.Registries, whose list a reload replaces; RegistryList, a fixed
// one).
type Registries interface {
	// CredentialsFor returns the repository's credentials reference and
	// how long they stay valid; the zero Ref means anonymous.
	CredentialsFor(repo string) (ref Ref, expire time.Duration)
}

// ForRegistries looks credentials up in a fixed registries list.
func ForRegistries(r *Resolver, list config.RegistryList) *RepoAuth {
	return &RepoAuth{Resolver: r, Registries: RegistryList(list)}
}

// RegistryList is a registries config as Registries: a repository uses
// the credentials of the entry with the longest prefix of it
// (config.RegistryList.Match).
type RegistryList config.RegistryList

var _ Registries = RegistryList(nil)

// CredentialsFor returns the credentials of repo's entry.
func (l RegistryList) CredentialsFor(repo string) (Ref, time.Duration) {
	if e := config.RegistryList(l).Match(repo); e != nil {
		return e.Credentials, e.CredsExpire.Duration
	}
	return Ref{}, 0
}

// Authenticator returns the repository's credentials, authn.Anonymous
// when none are configured. Repositories whose entries name the same
// reference share the cached value.
func (a *RepoAuth) Authenticator(ctx context.Context, repo string) (authn.Authenticator, error) {
	ref, expire := a.Registries.CredentialsFor(repo)
	return a.Resolver.Authenticator(ctx, ref, config.RegistryHost(repo), expire)
}

// Invalidate drops the repository's cached credentials after the registry
// refused them.
func (a *RepoAuth) Invalidate(repo string) {
	ref, _ := a.Registries.CredentialsFor(repo)
	a.Resolver.Invalidate(ref, config.RegistryHost(repo))
}
