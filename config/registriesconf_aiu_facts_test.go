package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Where argocd-image-updater (AIU) writes the registries.conf facts
// below down: paths in github.com/argoproj-labs/argocd-image-updater.
const (
	aiuRegistriesDoc = "docs/configuration/registries.md"
	aiuConfigGo      = "registry-scanner/pkg/registry/config.go"
	aiuEndpointsGo   = "registry-scanner/pkg/registry/endpoints.go"
	aiuRegistryGo    = "registry-scanner/pkg/registry/registry.go"
)

// TestAIURegistriesConfFacts reads registries.conf files as AIU documents
// (or codes) them: every field (name, api_url, prefix, ping, credentials,
// credsexpire, insecure, ca_file, ca_data, default, defaultns, limit,
// tagsortmode), what it means for image names (default, defaultns,
// longest prefix) and what AIU refuses. check runs on the parsed list;
// wantErr is a fragment of the error crowsnest must give.
func TestAIURegistriesConfFacts(t *testing.T) {
	tests := []struct {
		name    string
		source  string
		conf    string
		check   func(t *testing.T, l RegistryList)
		wantErr string
	}{
		{name: "the documented example", source: aiuRegistriesDoc + " (Configuration format)",
			conf: `registries:
- name: Docker Hub
  prefix: docker.io
  api_url: https://registry-1.docker.io
  credentials: secret:foo/bar#creds
  defaultns: library
  default: true
- name: RedHat Quay
  api_url: https://quay.io
  prefix: quay.io
  ca_file: /app/config/certs/quay-ca.pem
  credentials: env:REGISTRY_SECRET
`,
			check: func(t *testing.T, l RegistryList) {
				t.Helper()
				want := RegistryList{
					{Name: "Docker Hub", Prefix: "docker.io", APIURL: "https://registry-1.docker.io", DefaultNamespace: "library", Default: true,
						Credentials: CredentialRef{Source: CredsSecret, Namespace: "foo", Name: "bar", Field: "creds"},
						RateLimit:   DefaultRegistryRateLimit, MaxConcurrency: DefaultRegistryMaxConcurrency},
					{Name: "RedHat Quay", Prefix: "quay.io", APIURL: "https://quay.io", CAFile: "/app/config/certs/quay-ca.pem",
						Credentials: CredentialRef{Source: CredsEnv, Env: "REGISTRY_SECRET"},
						RateLimit:   DefaultRegistryRateLimit, MaxConcurrency: DefaultRegistryMaxConcurrency},
				}
				if diff := cmp.Diff(want, l); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}},
		{name: "insecure: yes (YAML 1.1 booleans, as in the ConfigMap example)", source: aiuRegistriesDoc + " (argocd-image-updater-config example)",
			conf:  "registries:\n- {name: q, api_url: 'https://quay.io', prefix: quay.io, insecure: yes, ping: no}\n",
			check: func(t *testing.T, l RegistryList) { t.Helper(); wantEq(t, true, l[0].Insecure) }},
		{name: "credsexpire is a duration", source: aiuRegistriesDoc + " (credsexpire)",
			conf:  "registries:\n- {name: e, api_url: 'https://e.io', prefix: e.io, credentials: 'ext:/auth.sh', credsexpire: 12h}\n",
			check: func(t *testing.T, l RegistryList) { t.Helper(); wantEq(t, 12*time.Hour, l[0].CredsExpire.Duration) }},
		{name: "credentials forms: pullsecret:, secret:, env:, ext:", source: "docs/basics/authentication.md, registry-scanner/pkg/image/credentials.go",
			conf: "registries:\n- {name: a, api_url: 'https://a.io', prefix: a.io, credentials: 'pullsecret:argocd/regcred'}\n" +
				"- {name: b, api_url: 'https://b.io', prefix: b.io, credentials: 'secret:argocd/creds#token'}\n" +
				"- {name: c, api_url: 'https://c.io', prefix: c.io, credentials: 'env:REG'}\n" +
				"- {name: d, api_url: 'https://d.io', prefix: d.io, credentials: 'ext:/app/auth.sh'}\n",
			check: func(t *testing.T, l RegistryList) {
				t.Helper()
				var got []string
				for i := range l {
					got = append(got, l[i].Credentials.String())
				}
				wantEq(t, []string{"pullsecret:argocd/regcred", "secret:argocd/creds#token", "env:REG", "ext:/app/auth.sh"}, got)
			}},
		{name: "limit is requests per second", source: aiuRegistriesDoc + " (Configuring a request rate limit)",
			conf:  "registries:\n- {name: q, api_url: 'https://quay.io', prefix: quay.io, limit: 10}\n",
			check: func(t *testing.T, l RegistryList) { t.Helper(); wantEq(t, 10.0, l[0].RateLimit) }},
		{name: "limit defaults to 20", source: aiuRegistriesDoc + " (\"The default for all registries is 20\")",
			conf:  "registries:\n- {name: q, api_url: 'https://quay.io', prefix: quay.io}\n",
			check: func(t *testing.T, l RegistryList) { t.Helper(); wantEq(t, 20.0, l[0].RateLimit) }},
		{name: "two prefixes of one host keep their own limits", source: aiuEndpointsGo + " (a Limiter per RegistryEndpoint)",
			conf: "registries:\n- {name: a, api_url: 'https://ghcr.io', prefix: ghcr.io/a, limit: 1}\n" +
				"- {name: b, api_url: 'https://ghcr.io', prefix: ghcr.io/b, limit: 50}\n",
			check: func(t *testing.T, l RegistryList) {
				t.Helper()
				wantEq(t, []float64{1, 50}, []float64{l.Match("ghcr.io/a/app").RateLimit, l.Match("ghcr.io/b/app").RateLimit})
			}},
		{name: "tagsortmode values", source: aiuEndpointsGo + " (TagListSortFromString)",
			conf: "registries:\n- {name: a, api_url: 'https://a.io', prefix: a.io, tagsortmode: latest-first}\n" +
				"- {name: b, api_url: 'https://b.io', prefix: b.io, tagsortmode: latest-last}\n" +
				"- {name: c, api_url: 'https://c.io', prefix: c.io, tagsortmode: none}\n",
			check: func(t *testing.T, l RegistryList) { t.Helper(); wantEq(t, 3, len(l)) }},
		{name: "tagsortmode is case-insensitive", source: aiuEndpointsGo + " (strings.ToLower in TagListSortFromString)",
			conf:  "registries:\n- {name: a, api_url: 'https://a.io', prefix: a.io, tagsortmode: Latest-First}\n",
			check: func(t *testing.T, l RegistryList) { t.Helper(); wantEq(t, 1, len(l)) }},
		{name: "an unknown tagsortmode is refused", source: aiuConfigGo + " (\"unknown tag sort mode\")",
			conf: "registries:\n- {name: a, api_url: 'https://a.io', prefix: a.io, tagsortmode: newest}\n", wantErr: "tagsortmode"},
		{name: "default: true makes unqualified names that registry's", source: aiuRegistriesDoc + " (Configuring a default registry)",
			conf: "registries:\n- {name: RedHat Quay, api_url: 'https://quay.io', prefix: quay.io, default: true}\n",
			check: func(t *testing.T, l RegistryList) {
				t.Helper()
				wantEq(t, "quay.io/argoproj/argocd", l.Qualify("argoproj/argocd"))
			}},
		{name: "only one default registry", source: aiuRegistriesDoc + " (\"you can only configure one registry as the default\")",
			conf:    "registries:\n- {name: a, api_url: 'https://a.io', prefix: a.io, default: true}\n- {name: b, api_url: 'https://b.io', prefix: b.io, default: true}\n",
			wantErr: "only one registry may be the default"},
		{name: "defaultns completes one-segment names", source: aiuRegistriesDoc + " (Configuring a registry's default namespace), " + aiuRegistryGo,
			conf: "registries:\n- {name: Docker Hub, api_url: 'https://registry-1.docker.io', prefix: docker.io, defaultns: library}\n",
			check: func(t *testing.T, l RegistryList) {
				t.Helper()
				wantEq(t, "docker.io/library/nginx:1.27", l.Qualify("nginx:1.27"))
			}},
		{name: "defaultns of a private registry", source: aiuRegistryGo + " (nameInRegistry = DefaultNS + \"/\" + ImageName)",
			conf: "registries:\n- {name: local, api_url: 'https://registry.local', prefix: registry.local, defaultns: base}\n",
			check: func(t *testing.T, l RegistryList) {
				t.Helper()
				wantEq(t, "registry.local/base/app:1", l.Qualify("registry.local/app:1"))
			}},
		{name: "the longest matching prefix serves an image", source: aiuEndpointsGo + " (findRegistryEndpointByImage)",
			conf: "registries:\n- {name: host, api_url: 'https://ghcr.io', prefix: ghcr.io}\n" +
				"- {name: team, api_url: 'https://ghcr.io', prefix: ghcr.io/team, credentials: 'env:TEAM'}\n",
			check: func(t *testing.T, l RegistryList) {
				t.Helper()
				wantEq(t, []string{"team", "host"}, []string{l.Match("ghcr.io/team/app").Name, l.Match("ghcr.io/other/app").Name})
			}},
		{name: "an entry without prefix is the default, at its api_url's host", source: aiuConfigGo + " (a prefix-less entry is the one default)",
			conf: "registries:\n- {name: Local, api_url: 'https://registry.local:5000'}\n",
			check: func(t *testing.T, l RegistryList) {
				t.Helper()
				wantEq(t, "registry.local:5000/team/app", l.Qualify("team/app"))
			}},
		{name: "two entries without prefix are refused", source: aiuConfigGo + " (\"there must be only one default registry\")",
			conf:    "registries:\n- {name: a, api_url: 'https://a.io'}\n- {name: b, api_url: 'https://b.io'}\n",
			wantErr: "only one registry may be the default"},
		{name: "unknown keys are refused", source: aiuConfigGo + " (yaml.UnmarshalStrict)",
			conf: "registries:\n- {name: a, api_url: 'https://a.io', prefix: a.io, limt: 3}\n", wantErr: "unknown field"},
		{name: "ca_data must hold a PEM certificate", source: aiuConfigGo + " (\"ca_data does not contain a valid PEM certificate\")",
			conf: "registries:\n- {name: a, api_url: 'https://a.io', prefix: a.io, ca_data: 'hello'}\n", wantErr: "ca_data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ParseRegistriesConf([]byte(tt.conf))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("AIU (%s) refuses it; crowsnest: %v, want an error with %q", tt.source, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("AIU (%s) accepts it; crowsnest: %v", tt.source, err)
			}
			tt.check(t, l)
		})
	}
}

func wantEq[T any](t *testing.T, want, got T) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-AIU +crowsnest):\n%s", diff)
	}
}
