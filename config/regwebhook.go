package config

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
)

// RegistryWebhook configures the receiver of registry push notifications.
type RegistryWebhook struct {
	// AllowUnauthenticated accepts sources without a secret. Off by
	// default: anyone who can reach the endpoint could make crowsnest
	// poll registries at will.
	AllowUnauthenticated bool `yaml:"allowUnauthenticated"`
	// Sources are the senders, each at /webhooks/registry/<name or type>.
	Sources []WebhookSource `yaml:"sources"`
}

// WebhookSource is one sender of push notifications.
type WebhookSource struct {
	// Type is the sender's product: dockerhub, ghcr, harbor, quay,
	// distribution or generic.
	Type string `yaml:"type"`
	// Name is the URL path segment; empty means the type. Two senders of
	// one type need names.
	Name string `yaml:"name"`
	// Registry replaces the registry host the sender reports.
	Registry string `yaml:"registry"`
	// SecretEnv or SecretFile holds the shared secret (exactly one unless
	// allowUnauthenticated); the secret itself never goes in this file.
	SecretEnv  string `yaml:"secretEnv"`
	SecretFile string `yaml:"secretFile"`
}

// WebhookTypes are the senders the receiver understands.
var WebhookTypes = []string{"dockerhub", "ghcr", "harbor", "quay", "distribution", "generic"}

var (
	webhookNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	envNameRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// envNameWanted explains a bad environment variable name without
// repeating it: a user may have pasted the secret itself.
const envNameWanted = "invalid variable name: want letters, digits and '_', not starting with a digit (a secret itself never goes here)"

func (w *RegistryWebhook) validate(path string, errs *fieldErrors) {
	names := map[string]int{}
	for i, s := range w.Sources {
		p := fieldpath.Index(fieldpath.Join(path, "sources"), i)
		if !slices.Contains(WebhookTypes, s.Type) {
			errs.invalid(fieldpath.Join(p, "type"), "unsupported value %q, want one of %s", s.Type, strings.Join(WebhookTypes, ", "))
		}
		if s.Name != "" && !webhookNameRE.MatchString(s.Name) {
			errs.invalid(fieldpath.Join(p, "name"), "invalid name %q: lower-case letters, digits, '.', '_' or '-'", s.Name)
		}
		name := cmp.Or(s.Name, s.Type)
		if j, dup := names[name]; dup {
			errs.invalid(fieldpath.Join(p, "name"), "duplicate source %q (also %s); give each sender of one type a name", name, fieldpath.Index(fieldpath.Join(path, "sources"), j))
		} else {
			names[name] = i
		}
		if s.Registry != "" && !hostRE.MatchString(s.Registry) {
			errs.invalid(fieldpath.Join(p, "registry"), "invalid registry host %q", s.Registry)
		}
		switch {
		case s.SecretEnv != "" && s.SecretFile != "":
			errs.invalid(fieldpath.Join(p, "secretFile"), "set secretEnv or secretFile, not both")
		case s.SecretEnv == "" && s.SecretFile == "" && !w.AllowUnauthenticated:
			errs.invalid(fieldpath.Join(p, "secretEnv"), "a secret is required: set secretEnv or secretFile (or webhook.allowUnauthenticated)")
		case s.SecretEnv != "" && !envNameRE.MatchString(s.SecretEnv):
			errs.invalid(fieldpath.Join(p, "secretEnv"), "%s", envNameWanted)
		}
	}
}

// LoadSecret reads the source's secret from its environment variable or
// file, without a trailing newline; nil when none is configured.
func (s *WebhookSource) LoadSecret() ([]byte, error) {
	switch {
	case s.SecretEnv != "":
		v, ok := os.LookupEnv(s.SecretEnv)
		if !ok || v == "" {
			return nil, fmt.Errorf("webhook source %s: environment variable %s is empty or not set", cmp.Or(s.Name, s.Type), s.SecretEnv)
		}
		return []byte(v), nil
	case s.SecretFile != "":
		b, err := os.ReadFile(s.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("webhook source %s: reading secret: %w", cmp.Or(s.Name, s.Type), err)
		}
		b = bytes.TrimRight(b, "\r\n")
		if len(b) == 0 {
			return nil, fmt.Errorf("webhook source %s: secret file %s is empty", cmp.Or(s.Name, s.Type), s.SecretFile)
		}
		return b, nil
	}
	return nil, nil
}
