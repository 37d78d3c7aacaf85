package creds

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"

	"github.com/crowsnest-dev/crowsnest/config"
)

// maxDockerConfigBytes bounds a Docker config file: real ones are a few
// KiB, and the file may be anything the path points to.
const maxDockerConfigBytes = 1 << 20

// ErrNoKubernetes says a reference needs Secrets but the Resolver has no
// SecretGetter (e.g. `crowsnest test` outside a cluster).
var ErrNoKubernetes = errors.New("no Kubernetes access configured")

// dockerConfig is a Docker config.json or a dockerconfigjson Secret.
type dockerConfig struct {
	Auths       map[string]dockerAuth `json:"auths"`
	CredsStore  string                `json:"credsStore"`
	CredHelpers map[string]string     `json:"credHelpers"`
}

// dockerAuth is one registry's entry of a Docker config.
type dockerAuth struct {
	Username      string `json:"username"`
	Password      string `json:"password"`
	Auth          string `json:"auth"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
}

func (r *Resolver) secret(ctx context.Context, ref Ref) (*corev1.Secret, error) {
	if r.Secrets == nil {
		return nil, fmt.Errorf("%w: %s needs Secrets", ErrNoKubernetes, ref.Source)
	}
	return r.Secrets.Get(ctx, ref.Namespace, ref.Name)
}

func (r *Resolver) fromPullSecret(ctx context.Context, ref Ref, host string) (authn.AuthConfig, error) {
	s, err := r.secret(ctx, ref)
	if err != nil {
		return authn.AuthConfig{}, err
	}
	where := fmt.Sprintf("secret %s/%s", ref.Namespace, ref.Name)
	var cfg dockerConfig
	if data, ok := s.Data[corev1.DockerConfigJsonKey]; ok {
		if err := decodeJSON(data, &cfg); err != nil {
			return authn.AuthConfig{}, fmt.Errorf("%s: %s: %w", where, corev1.DockerConfigJsonKey, err)
		}
	} else if data, ok := s.Data[corev1.DockerConfigKey]; ok {
		if err := decodeJSON(data, &cfg.Auths); err != nil {
			return authn.AuthConfig{}, fmt.Errorf("%s: %s: %w", where, corev1.DockerConfigKey, err)
		}
	} else {
		return authn.AuthConfig{}, fmt.Errorf("%s (type %s) has neither %s nor %s; want a %s or %s Secret", where, s.Type,
			corev1.DockerConfigJsonKey, corev1.DockerConfigKey, corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg)
	}
	return pickAuth(cfg, host, where)
}

func (r *Resolver) fromSecretField(ctx context.Context, ref Ref, host string) (authn.AuthConfig, error) {
	s, err := r.secret(ctx, ref)
	if err != nil {
		return authn.AuthConfig{}, err
	}
	if r.Bound != nil && !r.Bound.SendsTo(ref, host) {
		if err := boundTo(s, host); err != nil {
			return authn.AuthConfig{}, fmt.Errorf("secret %s/%s: %w", ref.Namespace, ref.Name, err)
		}
	}
	v, ok := s.Data[ref.Field]
	if !ok {
		return authn.AuthConfig{}, fmt.Errorf("secret %s/%s has no field %q", ref.Namespace, ref.Name, ref.Field)
	}
	return parseUserPass(string(v), fmt.Sprintf("secret %s/%s field %s", ref.Namespace, ref.Name, ref.Field))
}

// Binding says where the operator sends credentials an annotation names
// (setup.Registries: tenancy.credentials, the registries config).
type Binding interface {
	// SendsTo reports whether ref may go to registryHost whatever its
	// Secret's url says.
	SendsTo(ref Ref, registryHost string) bool
}

// ErrUnbound says a Secret named for a registry is not for that registry.
var ErrUnbound = errors.New("the Secret is not for this registry")

// boundTo checks that the Secret s is for registry host: its url (a
// registry host or URL) names host.
func boundTo(s *corev1.Secret, host string) error {
	raw := strings.TrimSpace(string(s.Data["url"]))
	if raw == "" {
		return fmt.Errorf("%w: it has no url; give it url: %s, or name it with that registry under tenancy.credentials", ErrUnbound, host)
	}
	if config.RegistryHost(raw) != host {
		return fmt.Errorf("%w: its url names registry %s, not %s", ErrUnbound, config.RegistryHost(raw), host)
	}
	return nil
}

func (r *Resolver) fromEnv(ref Ref) (authn.AuthConfig, error) {
	v, ok := r.lookupEnv(ref.Env)
	if !ok || v == "" {
		return authn.AuthConfig{}, fmt.Errorf("environment variable %s is not set", ref.Env)
	}
	return parseUserPass(v, "environment variable "+ref.Env)
}

func fromDockerConfigFile(ref Ref, host string) (authn.AuthConfig, error) {
	f, err := os.Open(ref.Path)
	if err != nil {
		return authn.AuthConfig{}, fmt.Errorf("reading docker config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDockerConfigBytes+1))
	if err != nil {
		return authn.AuthConfig{}, fmt.Errorf("reading docker config %s: %w", ref.Path, err)
	}
	if len(data) > maxDockerConfigBytes {
		return authn.AuthConfig{}, fmt.Errorf("docker config %s is larger than %d bytes", ref.Path, maxDockerConfigBytes)
	}
	var cfg dockerConfig
	if err := decodeJSON(data, &cfg); err != nil {
		return authn.AuthConfig{}, fmt.Errorf("docker config %s: %w", ref.Path, err)
	}
	return pickAuth(cfg, host, "docker config "+ref.Path)
}

// decodeJSON unmarshals without letting the decoder's message quote the
// input, which holds secrets: only the position of a syntax error.
func decodeJSON(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syn):
		return fmt.Errorf("not valid JSON (at byte %d)", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("unexpected JSON %s at %s", typ.Value, typ.Field)
	default:
		return errors.New("not valid JSON")
	}
}

// pickAuth returns the entry for host; keys may be URLs
// ("https://index.docker.io/v1/") or Docker Hub aliases.
func pickAuth(cfg dockerConfig, host, where string) (authn.AuthConfig, error) {
	keys := make([]string, 0, len(cfg.Auths))
	for k := range cfg.Auths {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	hosts := make([]string, 0, len(keys))
	for _, k := range keys {
		if config.RegistryHost(k) == host {
			return toAuthConfig(cfg.Auths[k], fmt.Sprintf("%s entry %s", where, k))
		}
		hosts = append(hosts, config.RegistryHost(k))
	}
	msg := fmt.Sprintf("%s has no entry for registry %s (entries: %s)", where, host, strings.Join(hosts, ", "))
	if cfg.CredsStore != "" || len(cfg.CredHelpers) > 0 {
		msg += "; credential helpers (credsStore, credHelpers) are not run"
	}
	return authn.AuthConfig{}, errors.New(msg)
}

func toAuthConfig(e dockerAuth, where string) (authn.AuthConfig, error) {
	cfg := authn.AuthConfig{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken}
	if e.Auth != "" {
		raw, err := base64.StdEncoding.DecodeString(e.Auth)
		if err != nil {
			raw, err = base64.RawStdEncoding.DecodeString(e.Auth)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if err != nil || !ok {
			return authn.AuthConfig{}, fmt.Errorf("%s: auth is not base64 of user:password", where)
		}
		cfg.Username, cfg.Password = user, pass
	}
	if (cfg.Username == "" || cfg.Password == "") && cfg.IdentityToken == "" && cfg.RegistryToken == "" {
		return authn.AuthConfig{}, fmt.Errorf("%s: no user name and password, identitytoken or registrytoken", where)
	}
	return cfg, nil
}

// parseUserPass reads "user:password" (the password may hold colons).
// Errors name where the value came from, never the value.
func parseUserPass(s, where string) (authn.AuthConfig, error) {
	s = strings.TrimSpace(s)
	user, pass, ok := strings.Cut(s, ":")
	switch {
	case strings.ContainsAny(s, "\r\n"):
		return authn.AuthConfig{}, fmt.Errorf("%s: want one line user:password, got several lines", where)
	case !ok:
		return authn.AuthConfig{}, fmt.Errorf("%s: want user:password, got no colon", where)
	case user == "":
		return authn.AuthConfig{}, fmt.Errorf("%s: want user:password, got an empty user name", where)
	case pass == "":
		return authn.AuthConfig{}, fmt.Errorf("%s: want user:password, got an empty password", where)
	}
	return authn.AuthConfig{Username: user, Password: pass}, nil
}
