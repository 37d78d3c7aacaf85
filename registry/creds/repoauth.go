package creds

import (
	"context"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/crowsnest-dev/crowsnest/config"
)

// RepoAuth supplies credentials per repository, the shape the registry
// client asks for (Authenticator(ctx, repo) and Invalidate(repo), repo as
// "ghcr.io/team-a/app"): Lookup names the reference and expiry configured
// for a repository, so images on one host can use different credentials.
type RepoAuth struct {
	Resolver *Resolver
	// Lookup returns the repository's credentials reference and how long
	// they stay valid; the zero Ref means anonymous.
	Lookup func(repo string) (ref Ref, expire time.Duration)
}

// ForRegistries looks credentials up in the registries config: the entry
// with the longest prefix of the repository (config.RegistryList.Match).
func ForRegistries(r *Resolver, list config.RegistryList) *RepoAuth {
	return &RepoAuth{Resolver: r, Lookup: func(repo string) (Ref, time.Duration) {
		if e := list.Match(repo); e != nil {
			return e.Credentials, e.CredsExpire.Duration
		}
		return Ref{}, 0
	}}
}

// Authenticator returns the repository's credentials, authn.Anonymous
// when none are configured. Repositories whose entries name the same
// reference share the cached value.
func (a *RepoAuth) Authenticator(ctx context.Context, repo string) (authn.Authenticator, error) {
	ref, expire := a.Lookup(repo)
	return a.Resolver.Authenticator(ctx, ref, config.RegistryHost(repo), expire)
}

// Invalidate drops the repository's cached credentials after the registry
// refused them.
func (a *RepoAuth) Invalidate(repo string) {
	ref, _ := a.Lookup(repo)
	a.Resolver.Invalidate(ref, config.RegistryHost(repo))
}
