package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crowsnest-dev/crowsnest/config/internal/strictyaml"
)

// CredentialSource names where credentials come from.
type CredentialSource string

// Credential sources; the first four are argocd-image-updater's.
const (
	// CredsPullSecret is a kubernetes.io/dockerconfigjson or dockercfg
	// Secret: pullsecret:<namespace>/<name>.
	CredsPullSecret CredentialSource = "pullsecret"
	// CredsSecret is one field of a Secret holding "user:password":
	// secret:<namespace>/<name>#<field>.
	CredsSecret CredentialSource = "secret"
	// CredsEnv is an environment variable holding "user:password": env:<VAR>.
	CredsEnv CredentialSource = "env"
	// CredsExt is an executable printing "user:password": ext:<absolute path>.
	CredsExt CredentialSource = "ext"
	// CredsDockerConfig is a Docker config.json file (its "auths"):
	// dockerconfig:<absolute path>.
	CredsDockerConfig CredentialSource = "dockerconfig"
)

// CredentialRef says where to find credentials, never the credentials
// themselves, so it is safe to log. The zero value means anonymous.
type CredentialRef struct {
	Source CredentialSource
	// Namespace and Name locate the Secret (pullsecret, secret).
	Namespace, Name string
	// Field is the Secret's data key (secret).
	Field string
	// Env is the variable name (env).
	Env string
	// Path is the executable (ext) or config file (dockerconfig).
	Path string
}

const (
	credsWant    = "want pullsecret:<namespace>/<name>, secret:<namespace>/<name>#<field>, env:<VAR>, ext:<path> or dockerconfig:<path>"
	credsSources = "pullsecret:, secret:, env:, ext: or dockerconfig:"
)

var sourceNameRE = regexp.MustCompile(`^[a-z]{1,20}$`)

// ParseCredentialRef reads an argocd-image-updater credentials reference
// (or dockerconfig:<path>). Errors never repeat the whole input: a user
// may have pasted a password where a reference belongs.
func ParseCredentialRef(s string) (CredentialRef, error) {
	src, rest, ok := strings.Cut(s, ":")
	if !ok {
		return CredentialRef{}, fmt.Errorf("missing source; %s", credsWant)
	}
	ref := CredentialRef{Source: CredentialSource(src)}
	switch ref.Source {
	case CredsPullSecret, CredsSecret:
		nsName := rest
		if ref.Source == CredsSecret {
			var hasField bool
			if nsName, ref.Field, hasField = strings.Cut(rest, "#"); !hasField || ref.Field == "" {
				return CredentialRef{}, fmt.Errorf("%s: missing #<field>; want secret:<namespace>/<name>#<field>", src)
			}
			if msgs := validation.IsConfigMapKey(ref.Field); len(msgs) > 0 {
				return CredentialRef{}, fmt.Errorf("%s: invalid field %q: %s", src, ref.Field, strings.Join(msgs, "; "))
			}
		}
		var hasName bool
		if ref.Namespace, ref.Name, hasName = strings.Cut(nsName, "/"); !hasName {
			return CredentialRef{}, fmt.Errorf("%s: want %s:<namespace>/<name>, got %q", src, src, nsName)
		}
		if msgs := validation.IsDNS1123Label(ref.Namespace); len(msgs) > 0 {
			return CredentialRef{}, fmt.Errorf("%s: invalid namespace %q: %s", src, ref.Namespace, strings.Join(msgs, "; "))
		}
		if msgs := validation.IsDNS1123Subdomain(ref.Name); len(msgs) > 0 {
			return CredentialRef{}, fmt.Errorf("%s: invalid Secret name %q: %s", src, ref.Name, strings.Join(msgs, "; "))
		}
	case CredsEnv:
		if !envNameRE.MatchString(rest) {
			return CredentialRef{}, errors.New("env: " + envNameWanted)
		}
		ref.Env = rest
	case CredsExt, CredsDockerConfig:
		if !filepath.IsAbs(rest) {
			return CredentialRef{}, fmt.Errorf("%s: want an absolute path, got %q", src, rest)
		}
		ref.Path = rest
	default:
		if !sourceNameRE.MatchString(src) {
			return CredentialRef{}, fmt.Errorf("unknown source; %s", credsWant)
		}
		return CredentialRef{}, fmt.Errorf("unknown source %q; want %s", src, credsSources)
	}
	return ref, nil
}

// ParseCredentials reads a credentials setting as a user writes one (a
// pull-secret annotation or policy field, the registries list, a
// --credentials flag): "" is anonymous, the zero CredentialRef, and an
// error starts with "credentials:". The registry client and the update
// decisions both read settings with it, so they accept and refuse the same.
func ParseCredentials(s string) (CredentialRef, error) {
	if s == "" {
		return CredentialRef{}, nil
	}
	ref, err := ParseCredentialRef(s)
	if err != nil {
		return CredentialRef{}, fmt.Errorf("credentials: %w", err)
	}
	return ref, nil
}

// IsZero reports whether no credentials are configured.
func (r CredentialRef) IsZero() bool { return r == CredentialRef{} }

// String writes the reference back as ParseCredentialRef reads it.
func (r CredentialRef) String() string {
	switch r.Source {
	case "":
		return ""
	case CredsPullSecret:
		return fmt.Sprintf("%s:%s/%s", r.Source, r.Namespace, r.Name)
	case CredsSecret:
		return fmt.Sprintf("%s:%s/%s#%s", r.Source, r.Namespace, r.Name, r.Field)
	case CredsEnv:
		return string(r.Source) + ":" + r.Env
	default:
		return string(r.Source) + ":" + r.Path
	}
}

func (r *CredentialRef) decodeNode(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return fmt.Errorf("expected a credentials reference string, got %s", describeRedacted(n))
	}
	if n.Value == "" {
		*r = CredentialRef{}
		return nil
	}
	ref, err := ParseCredentialRef(n.Value)
	if err != nil {
		return err
	}
	*r = ref
	return nil
}

// describeRedacted is describe without scalar values, for fields where a
// user may have pasted a secret.
func describeRedacted(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
		return "a " + strings.TrimPrefix(n.Tag, "!!")
	}
	return strictyaml.Describe(n)
}

// MarshalYAML writes the reference as a string.
func (r CredentialRef) MarshalYAML() (any, error) { return r.String(), nil }
