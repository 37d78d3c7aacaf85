package creds

import (
	"context"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/crowsnest-dev/crowsnest/config"
)

// HostAuth supplies credentials per registry host, the shape the registry
// client asks for (Authenticator(ctx, host) and Invalidate(host)): Lookup
// names the reference and expiry configured for a host.
type HostAuth struct {
	Resolver *Resolver
	// Lookup returns the host's credentials reference and how long they
	// stay valid; the zero Ref means anonymous.
	Lookup func(host string) (ref Ref, expire time.Duration)
}

// ForRegistries looks credentials up in the registries config: the entry
// whose prefix is the whole host (entries with a path prefix cover only
// some of a host's images, so they cannot speak for the host).
func ForRegistries(r *Resolver, list config.RegistryList) *HostAuth {
	return &HostAuth{Resolver: r, Lookup: func(host string) (Ref, time.Duration) {
		if e := list.MatchHost(host); e != nil {
			return e.Credentials, e.CredsExpire.Duration
		}
		return Ref{}, 0
	}}
}

// Authenticator returns the host's credentials, authn.Anonymous when none
// are configured.
func (h *HostAuth) Authenticator(ctx context.Context, host string) (authn.Authenticator, error) {
	ref, expire := h.Lookup(host)
	return h.Resolver.Authenticator(ctx, ref, host, expire)
}

// Invalidate drops the host's cached credentials after the registry
// refused them.
func (h *HostAuth) Invalidate(host string) {
	ref, _ := h.Lookup(host)
	h.Resolver.Invalidate(ref, host)
}
