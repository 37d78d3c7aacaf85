package creds

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
)

// SecretGetter reads one Secret; KubeSecrets adapts a clientset, tests
// may use a map.
type SecretGetter interface {
	Get(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// KubeSecrets reads Secrets through a typed clientset.
type KubeSecrets struct{ Client kubecore.SecretsGetter }

var _ SecretGetter = KubeSecrets{}

// Get reads the Secret namespace/name.
func (k KubeSecrets) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s, err := k.Client.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
	}
	return s, nil
}

// Resolver defaults. Ten seconds lets a script call a cloud token endpoint
// (the usual ext: use) while a hung one cannot stall polling for long;
// the apiserver answers a Secret read in milliseconds, 30s covers a slow one.
const (
	DefaultExtTimeout    = 10 * time.Second
	DefaultSecretTimeout = 30 * time.Second
)

// Resolver turns references into authenticators and caches them per
// (reference, registry host). It is safe for concurrent use; the zero
// value works, without Secrets (pullsecret: and secret: then fail).
type Resolver struct {
	// Secrets reads Kubernetes Secrets for pullsecret: and secret:.
	Secrets SecretGetter
	// Now is the clock for expiry; nil is time.Now.
	Now func() time.Time
	// ExtTimeout bounds one run of an ext: script; zero is DefaultExtTimeout.
	ExtTimeout time.Duration
	// LookupEnv reads env: variables; nil is os.LookupEnv.
	LookupEnv func(key string) (string, bool)
	// Log receives debug records naming references, never credentials.
	Log *slog.Logger
	// Bound, when set, binds secret: references to their registry: one
	// goes to a registry only when Bound says the operator sends it there
	// (a tenancy.credentials entry's registries, the registries config),
	// or when the Secret's own url names that registry. nil binds none
	// (the operator's own references).
	Bound Binding

	mu     sync.Mutex
	cache  map[cacheKey]cached
	flight singleflight.Group
	// waiting counts the calls that joined a read and wait for it: tests
	// open a held read once every caller joined.
	waiting atomic.Int32
}

type cacheKey struct{ ref, host string }

type cached struct {
	auth    authn.Authenticator
	fetched time.Time
}

// Authenticator returns credentials for registryHost from ref, reading
// them again once expire has passed since they were read (expire 0 keeps
// them until Invalidate). While cached, it returns the same value, so a
// caller can tell fresh credentials by comparing. The zero Ref is
// authn.Anonymous. Concurrent calls for one key share one read.
func (r *Resolver) Authenticator(ctx context.Context, ref Ref, registryHost string, expire time.Duration) (authn.Authenticator, error) {
	if ref.IsZero() {
		return authn.Anonymous, nil
	}
	key := cacheKey{ref: ref.String(), host: config.RegistryHost(registryHost)}
	r.mu.Lock()
	c, ok := r.cache[key]
	r.mu.Unlock()
	if ok && (expire <= 0 || r.now().Sub(c.fetched) < expire) {
		return c.auth, nil
	}
	ch := r.flight.DoChan(key.ref+"\x00"+key.host, func() (any, error) {
		// The read outlives a caller that gives up, for the others.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.extTimeout()+DefaultSecretTimeout)
		defer cancel()
		auth, err := r.resolve(rctx, ref, key.host)
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.cache == nil {
			r.cache = map[cacheKey]cached{}
		}
		r.cache[key] = cached{auth: auth, fetched: r.now()}
		r.log().Debug("credentials read", "credentials", key.ref, "registry", key.host)
		return auth, nil
	})
	r.waiting.Add(1)
	defer r.waiting.Add(-1)
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("credentials %s for %s: %w", key.ref, key.host, ctx.Err())
	case res := <-ch:
		if res.Err != nil {
			return nil, fmt.Errorf("credentials %s for %s: %w", key.ref, key.host, res.Err)
		}
		return res.Val.(authn.Authenticator), nil
	}
}

// Invalidate drops cached credentials, so the next Authenticator call
// reads them again: for a retry after the registry answered 401 or 403.
func (r *Resolver) Invalidate(ref Ref, registryHost string) {
	key := cacheKey{ref: ref.String(), host: config.RegistryHost(registryHost)}
	r.mu.Lock()
	_, ok := r.cache[key]
	delete(r.cache, key)
	r.mu.Unlock()
	if ok {
		r.log().Debug("credentials invalidated", "credentials", key.ref, "registry", key.host)
	}
}

// Reset drops every cached credential, e.g. after a config reload.
func (r *Resolver) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.cache)
}

// resolve reads the credentials ref points to.
func (r *Resolver) resolve(ctx context.Context, ref Ref, host string) (authn.Authenticator, error) {
	var (
		cfg authn.AuthConfig
		err error
	)
	switch ref.Source {
	case config.CredsPullSecret:
		cfg, err = r.fromPullSecret(ctx, ref, host)
	case config.CredsSecret:
		cfg, err = r.fromSecretField(ctx, ref, host)
	case config.CredsEnv:
		cfg, err = r.fromEnv(ref)
	case config.CredsExt:
		cfg, err = r.fromExt(ctx, ref)
	case config.CredsDockerConfig:
		cfg, err = fromDockerConfigFile(ref, host)
	default:
		err = fmt.Errorf("unknown source %q", ref.Source)
	}
	if err != nil {
		return nil, err
	}
	return &credential{cfg: cfg, from: ref.String()}, nil
}

func (r *Resolver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Resolver) extTimeout() time.Duration {
	if r.ExtTimeout > 0 {
		return r.ExtTimeout
	}
	return DefaultExtTimeout
}

func (r *Resolver) lookupEnv(key string) (string, bool) {
	if r.LookupEnv != nil {
		return r.LookupEnv(key)
	}
	return os.LookupEnv(key)
}

func (r *Resolver) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.New(slog.DiscardHandler)
}

// credential is an authenticator that will not print what it holds:
// fmt (every verb) and slog show only where it came from.
type credential struct {
	cfg  authn.AuthConfig
	from string
}

var (
	_ authn.Authenticator = (*credential)(nil)
	_ slog.LogValuer      = (*credential)(nil)
	_ fmt.Formatter       = (*credential)(nil)
)

// Authorization returns a copy, so callers cannot change the cached value.
func (c *credential) Authorization() (*authn.AuthConfig, error) {
	cfg := c.cfg
	return &cfg, nil
}

func (c *credential) String() string       { return "credentials from " + c.from + " (redacted)" }
func (c *credential) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Format prints String for every verb; without it %d or %t would print
// the fields.
func (c *credential) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }
