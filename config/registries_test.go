package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testCA is a self-signed CA certificate in PEM, made once per run.
var testCA = sync.OnceValue(func() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "crowsnest test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
})

func TestRegistriesErrorsNameTheField(t *testing.T) {
	const reg = header + "registries:\n"
	tests := []struct {
		name string
		doc  string
		want []FieldError
	}{
		{name: "unknown key", doc: reg + "  pollIntervall: 1m\n",
			want: []FieldError{{Path: "registries.pollIntervall", Line: 4, Msg: `did you mean "pollInterval"?`}}},
		{name: "poll interval too short", doc: reg + "  pollInterval: 1s\n",
			want: []FieldError{{Path: "registries.pollInterval", Line: 4, Msg: "must be at least 5s, got 1s"}}},
		{name: "ttl above the poll interval", doc: reg + "  pollInterval: 1m\n  tagCacheTTL: 2m\n",
			want: []FieldError{{Path: "registries.tagCacheTTL", Line: 5, Msg: "must not exceed pollInterval (1m0s)"}}},
		{name: "negative ttl", doc: reg + "  tagCacheTTL: -1s\n",
			want: []FieldError{{Path: "registries.tagCacheTTL", Line: 4, Msg: "must not be negative"}}},
		{name: "metadata cache size", doc: reg + "  metadataCacheSize: -5\n",
			want: []FieldError{{Path: "registries.metadataCacheSize", Line: 4, Msg: "must be between 1 and 10000000, got -5"}}},
		{name: "request timeout", doc: reg + "  requestTimeout: -1s\n",
			want: []FieldError{{Path: "registries.requestTimeout", Line: 4, Msg: "must be positive"}}},
		{name: "missing prefix", doc: reg + "  list:\n    - name: a\n      apiURL: https://a.example\n",
			want: []FieldError{{Path: "registries.list[0].prefix", Line: 5, Msg: "required"}}},
		{name: "prefix with scheme", doc: reg + "  list:\n    - prefix: https://ghcr.io\n",
			want: []FieldError{{Path: "registries.list[0].prefix", Line: 5, Msg: `invalid registry host "https:"`}}},
		{name: "prefix with bad path", doc: reg + "  list:\n    - prefix: ghcr.io/My-Org\n",
			want: []FieldError{{Path: "registries.list[0].prefix", Line: 5, Msg: `invalid repository path component "My-Org"`}}},
		{name: "prefix with trailing slash", doc: reg + "  list:\n    - prefix: ghcr.io/\n",
			want: []FieldError{{Path: "registries.list[0].prefix", Line: 5, Msg: "trailing slash"}}},
		{name: "api url without scheme", doc: reg + "  list:\n    - prefix: a.io\n    - prefix: b.io\n      apiURL: b.io\n",
			want: []FieldError{{Path: "registries.list[1].apiURL", Line: 7, Msg: "want an http:// or https:// URL"}}},
		{name: "api url with a path", doc: reg + "  list:\n    - prefix: docker.io\n      apiURL: https://index.docker.io/v1/\n",
			want: []FieldError{{Path: "registries.list[0].apiURL", Line: 6, Msg: `must not have a path (got "/v1/")`}}},
		{name: "api url with a password is redacted", doc: reg + "  list:\n    - prefix: a.io\n      apiURL: https://bob:hunter2@a.io\n",
			want: []FieldError{{Path: "registries.list[0].apiURL", Line: 6, Msg: "must not carry credentials (https://bob:xxxxx@a.io)"}}},
		{name: "bad credentials", doc: reg + "  list:\n    - prefix: a.io\n      credentials: vault:x/y\n",
			want: []FieldError{{Path: "registries.list[0].credentials", Line: 6, Msg: `unknown source "vault"`}}},
		{name: "credentials not a string", doc: reg + "  list:\n    - prefix: a.io\n      credentials: [a]\n",
			want: []FieldError{{Path: "registries.list[0].credentials", Line: 6, Msg: "expected a credentials reference string, got a list"}}},
		{name: "negative creds expiry", doc: reg + "  list:\n    - prefix: a.io\n      credsExpire: -1h\n",
			want: []FieldError{{Path: "registries.list[0].credsExpire", Line: 6, Msg: "must not be negative"}}},
		{name: "ca data not PEM", doc: reg + "  list:\n    - prefix: a.io\n      caData: hello\n",
			want: []FieldError{{Path: "registries.list[0].caData", Line: 6, Msg: "no PEM certificate found"}}},
		{name: "bad default namespace", doc: reg + "  list:\n    - prefix: a.io\n      defaultNamespace: Lib\n",
			want: []FieldError{{Path: "registries.list[0].defaultNamespace", Line: 6, Msg: `invalid repository path component "Lib"`}}},
		{name: "negative rate limit", doc: reg + "  list:\n    - prefix: a.io\n      rateLimit: -1\n",
			want: []FieldError{{Path: "registries.list[0].rateLimit", Line: 6, Msg: "must be positive"}}},
		{name: "concurrency", doc: reg + "  list:\n    - prefix: a.io\n      maxConcurrency: 5000\n",
			want: []FieldError{{Path: "registries.list[0].maxConcurrency", Line: 6, Msg: "must be between 1 and 1000"}}},
		{name: "duplicate prefix after folding docker hub aliases",
			doc:  reg + "  list:\n    - prefix: docker.io\n    - prefix: ghcr.io\n    - prefix: index.docker.io\n",
			want: []FieldError{{Path: "registries.list[2].prefix", Line: 7, Msg: `duplicate prefix "index.docker.io" (also registries.list[0])`}}},
		{name: "two defaults", doc: reg + "  list:\n    - {prefix: a.io, default: true}\n    - {prefix: b.io, default: true}\n",
			want: []FieldError{{Path: "registries.list[1].default", Line: 6, Msg: "only one registry may be the default (registries.list[0] is)"}}},
		{name: "default namespace on a path prefix", doc: reg + "  list:\n    - {prefix: ghcr.io/org, defaultNamespace: base}\n",
			want: []FieldError{{Path: "registries.list[0].defaultNamespace", Line: 5, Msg: "only for an entry whose prefix is a registry host, or the default entry"}}},
		{name: "a path entry's CA differs from the host's", doc: reg + "  list:\n    - {prefix: ghcr.io, caFile: /a.pem}\n    - {prefix: ghcr.io/team-b, caFile: /b.pem}\n",
			want: []FieldError{{Path: "registries.list[1].caFile", Line: 6,
				Msg: "differs from registries.list[0] (prefix ghcr.io), whose connection settings apply to every image on ghcr.io"}}},
		{name: "without a host entry the shortest prefix speaks for the host",
			doc: reg + "  list:\n    - {prefix: ghcr.io/team-a/sub, insecure: true}\n    - {prefix: ghcr.io/team-a, apiURL: 'https://x.io'}\n    - {prefix: ghcr.io/team-b, apiURL: 'https://y.io'}\n",
			want: []FieldError{
				{Path: "registries.list[0].insecure", Line: 5, Msg: "differs from registries.list[1] (prefix ghcr.io/team-a)"},
				{Path: "registries.list[2].apiURL", Line: 7, Msg: "differs from registries.list[1] (prefix ghcr.io/team-a)"},
			}},
		{name: "webhook type", doc: reg + "  webhook:\n    sources:\n      - {type: gitlab, secretEnv: S}\n",
			want: []FieldError{{Path: "registries.webhook.sources[0].type", Line: 6, Msg: `unsupported value "gitlab"`}}},
		{name: "webhook secret required", doc: reg + "  webhook:\n    sources:\n      - type: harbor\n",
			want: []FieldError{{Path: "registries.webhook.sources[0].secretEnv", Line: 6, Msg: "a secret is required"}}},
		{name: "webhook two secrets", doc: reg + "  webhook:\n    sources:\n      - {type: quay, secretEnv: S, secretFile: /s}\n",
			want: []FieldError{{Path: "registries.webhook.sources[0].secretFile", Line: 6, Msg: "not both"}}},
		{name: "webhook bad env name", doc: reg + "  webhook:\n    sources:\n      - {type: quay, secretEnv: 1S}\n",
			want: []FieldError{{Path: "registries.webhook.sources[0].secretEnv", Line: 6, Msg: envNameWanted}}},
		{name: "webhook duplicate source", doc: reg + "  webhook:\n    sources:\n      - {type: harbor, secretEnv: A}\n      - {type: harbor, secretEnv: B}\n",
			want: []FieldError{{Path: "registries.webhook.sources[1].name", Line: 7, Msg: `duplicate source "harbor" (also registries.webhook.sources[0])`}}},
		{name: "webhook bad name and registry", doc: reg + "  webhook:\n    sources:\n      - {type: harbor, name: Prod, registry: 'x y', secretEnv: A}\n",
			want: []FieldError{
				{Path: "registries.webhook.sources[0].name", Line: 6, Msg: `invalid name "Prod"`},
				{Path: "registries.webhook.sources[0].registry", Line: 6, Msg: `invalid registry host "x y"`},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatalf("Parse() = %+v, want an error", c.Registries)
			}
			if diff := cmp.Diff(tt.want, gotFieldErrors(t, err, tt.want)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nfull error:\n%v", diff, err)
			}
		})
	}
}

func TestRegistriesValues(t *testing.T) {
	doc := header + `registries:
  pollInterval: 5m
  tagCacheTTL: 1m
  list:
    - name: Docker Hub
      prefix: docker.io
      apiURL: https://registry-1.docker.io
      credentials: pullsecret:argocd/dockerhub
      credsExpire: 1h
      defaultNamespace: library
    - prefix: registry.local:5000/team
      insecure: true
      rateLimit: 2.5
      maxConcurrency: 2
      default: true
      caData: |
` + indent(testCA(), "        ") + `
  webhook:
    sources:
      - {type: harbor, name: harbor-prod, registry: registry.local:5000, secretFile: /etc/crowsnest/harbor}
      - {type: ghcr, secretEnv: GHCR_SECRET}
`
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := Default().Registries
	want.PollInterval = Duration{5 * time.Minute}
	want.TagCacheTTL = Duration{time.Minute}
	want.List = RegistryList{
		{Name: "Docker Hub", Prefix: "docker.io", APIURL: "https://registry-1.docker.io",
			Credentials: CredentialRef{Source: CredsPullSecret, Namespace: "argocd", Name: "dockerhub"},
			CredsExpire: Duration{time.Hour}, DefaultNamespace: "library", RateLimit: 20, MaxConcurrency: 8},
		{Prefix: "registry.local:5000/team", Insecure: true, RateLimit: 2.5, MaxConcurrency: 2, Default: true, CAData: testCA()},
	}
	want.Webhook.Sources = []WebhookSource{
		{Type: "harbor", Name: "harbor-prod", Registry: "registry.local:5000", SecretFile: "/etc/crowsnest/harbor"},
		{Type: "ghcr", SecretEnv: "GHCR_SECRET"},
	}
	if diff := cmp.Diff(want, c.Registries); diff != "" {
		t.Errorf("registries (-want +got):\n%s", diff)
	}
	if got := c.Registries.TagTTL(); got != time.Minute {
		t.Errorf("TagTTL() = %s, want 1m", got)
	}
	if got := Default().Registries.TagTTL(); got != DefaultPollInterval {
		t.Errorf("default TagTTL() = %s, want the poll interval %s", got, DefaultPollInterval)
	}
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix)
}

func TestRegistryListMatch(t *testing.T) {
	list := RegistryList{
		{Name: "hub", Prefix: "docker.io"},
		{Name: "hub-team", Prefix: "docker.io/team"},
		{Name: "ghcr", Prefix: "ghcr.io"},
		{Name: "ghcr-org", Prefix: "ghcr.io/org"},
		{Name: "ghcr-team-a", Prefix: "ghcr.io/org/team-a"},
		{Name: "local", Prefix: "registry.local:5000", DefaultNamespace: "base"},
	}
	withDefault := append(RegistryList{{Name: "quay", Prefix: "quay.io", Default: true}}, list...)
	mirror := RegistryList{
		{Name: "mirror", Prefix: "harbor.local/hub", Default: true, DefaultNamespace: "library"},
		{Name: "mirror-library", Prefix: "harbor.local/hub/library"},
		{Name: "harbor", Prefix: "harbor.local"},
	}
	tests := []struct {
		list  RegistryList
		image string
		want  string // Name, "" for no match
	}{
		{list: list, image: "ghcr.io/org/app:1.0", want: "ghcr-org"},
		{list: list, image: "ghcr.io/org/team-a/app", want: "ghcr-team-a"},
		{list: list, image: "ghcr.io/org/team-ab/app", want: "ghcr-org"},
		{list: list, image: "ghcr.io/organ/app", want: "ghcr"},
		{list: list, image: "ghcr.io/org", want: "ghcr-org"},
		{list: list, image: "GHCR.io/other/app@sha256:abc", want: "ghcr"},
		{list: list, image: "nginx", want: "hub"},
		{list: list, image: "nginx:1.27", want: "hub"},
		{list: list, image: "team/app", want: "hub-team"},
		{list: list, image: "index.docker.io/team/app", want: "hub-team"},
		{list: list, image: "registry-1.docker.io/library/nginx", want: "hub"},
		{list: list, image: "registry.local:5000/a/b:tag", want: "local"},
		{list: list, image: "registry.local:5000/app", want: "local"},
		{list: list, image: "registry.local/a/b", want: ""},
		{list: list, image: "quay.io/a/b", want: ""},
		{list: list, image: "localhost/a", want: ""},
		{list: withDefault, image: "nginx", want: "quay"},
		{list: withDefault, image: "argoproj/argocd:v2", want: "quay"},
		{list: withDefault, image: "docker.io/team/app", want: "hub-team"},
		{list: withDefault, image: "example.com/app", want: ""},
		{list: mirror, image: "nginx", want: "mirror-library"},
		{list: mirror, image: "bitnami/redis", want: "mirror"},
		{list: mirror, image: "harbor.local/other/app", want: "harbor"},
		{list: nil, image: "nginx", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			got := ""
			if r := tt.list.Match(tt.image); r != nil {
				got = r.Name
			}
			if got != tt.want {
				t.Errorf("Match(%q) = %q, want %q", tt.image, got, tt.want)
			}
		})
	}
}

func TestRegistryListQualify(t *testing.T) {
	hub := Registry{Prefix: "docker.io", DefaultNamespace: "library"}
	local := Registry{Prefix: "registry.local:5000", DefaultNamespace: "library", Default: true}
	tests := []struct {
		name  string
		list  RegistryList
		image string
		want  string
	}{
		{name: "no config keeps Docker Hub's reading", image: "nginx:1.27", want: "nginx:1.27"},
		{name: "docker hub's own namespace", list: RegistryList{hub}, image: "nginx:1.27", want: "docker.io/library/nginx:1.27"},
		{name: "docker hub without a namespace", list: RegistryList{{Prefix: "docker.io"}}, image: "nginx", want: "nginx"},
		{name: "docker hub namespace leaves two segments", list: RegistryList{hub}, image: "bitnami/redis", want: "docker.io/bitnami/redis"},
		{name: "default registry, one segment", list: RegistryList{hub, local}, image: "nginx", want: "registry.local:5000/library/nginx"},
		{name: "default registry keeps tag and digest", list: RegistryList{local}, image: "nginx:1.2@sha256:abc",
			want: "registry.local:5000/library/nginx:1.2@sha256:abc"},
		{name: "default registry, two segments", list: RegistryList{local}, image: "team/app:1", want: "registry.local:5000/team/app:1"},
		{name: "default without namespace", list: RegistryList{{Prefix: "registry.local:5000", Default: true}}, image: "nginx",
			want: "registry.local:5000/nginx"},
		{name: "default with a path prefix", list: RegistryList{{Prefix: "harbor.local/hub", Default: true, DefaultNamespace: "library"}},
			image: "nginx", want: "harbor.local/hub/library/nginx"},
		{name: "default prefix is folded", list: RegistryList{{Prefix: "Index.Docker.io", Default: true}}, image: "team/app",
			want: "docker.io/team/app"},
		{name: "a named host is never the default's", list: RegistryList{local}, image: "docker.io/nginx", want: "docker.io/nginx"},
		{name: "a named host's namespace", list: RegistryList{local}, image: "registry.local:5000/app:2", want: "registry.local:5000/library/app:2"},
		{name: "a named host with two segments", list: RegistryList{local}, image: "registry.local:5000/a/b", want: "registry.local:5000/a/b"},
		{name: "docker hub alias with a namespace", list: RegistryList{{Prefix: "docker.io", DefaultNamespace: "mirror"}},
			image: "index.docker.io/nginx", want: "index.docker.io/mirror/nginx"},
		{name: "a port is not a tag", list: RegistryList{local}, image: "localhost:5000/app", want: "localhost:5000/app"},
		{name: "localhost is a host", list: RegistryList{local}, image: "localhost/app", want: "localhost/app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.list.Qualify(tt.image); got != tt.want {
				t.Errorf("Qualify(%q) = %q, want %q", tt.image, got, tt.want)
			}
		})
	}
}

func TestRegistryListMatchHost(t *testing.T) {
	list := RegistryList{
		{Name: "hub", Prefix: "docker.io"}, {Name: "hub-team", Prefix: "docker.io/team"},
		{Name: "org-team", Prefix: "ghcr.io/org/team"}, {Name: "org", Prefix: "ghcr.io/org"}, {Name: "other", Prefix: "ghcr.io/other"},
		{Name: "local", Prefix: "registry.local:5000"},
	}
	for host, want := range map[string]string{
		"docker.io": "hub", "index.docker.io": "hub", "registry.local:5000": "local", "ghcr.io": "org", "registry.local": "", "quay.io": "",
	} {
		got := ""
		if r := list.MatchHost(host); r != nil {
			got = r.Name
		}
		if got != want {
			t.Errorf("MatchHost(%q) = %q, want %q", host, got, want)
		}
	}
}

func TestRegistryHost(t *testing.T) {
	for in, want := range map[string]string{
		"docker.io": "docker.io", "https://index.docker.io/v1/": "docker.io", "registry-1.docker.io": "docker.io",
		"Registry.Local:5000": "registry.local:5000", "http://localhost:5000/v2/": "localhost:5000", "ghcr.io\n": "ghcr.io",
	} {
		if got := RegistryHost(in); got != want {
			t.Errorf("RegistryHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWebhookSourceLoadSecret(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/secret", "s3cret\n")
	writeFile(t, dir+"/empty", "\n")
	t.Setenv("CROWSNEST_TEST_WEBHOOK_SECRET", "from-env")
	tests := []struct {
		src     WebhookSource
		want    string
		wantErr bool
	}{
		{src: WebhookSource{Type: "quay", SecretFile: dir + "/secret"}, want: "s3cret"},
		{src: WebhookSource{Type: "quay", SecretEnv: "CROWSNEST_TEST_WEBHOOK_SECRET"}, want: "from-env"},
		{src: WebhookSource{Type: "quay"}, want: ""},
		{src: WebhookSource{Type: "quay", SecretFile: dir + "/empty"}, wantErr: true},
		{src: WebhookSource{Type: "quay", SecretFile: dir + "/missing"}, wantErr: true},
		{src: WebhookSource{Type: "quay", SecretEnv: "CROWSNEST_TEST_UNSET_VARIABLE"}, wantErr: true},
	}
	for _, tt := range tests {
		got, err := tt.src.LoadSecret()
		if (err != nil) != tt.wantErr {
			t.Errorf("LoadSecret(%+v) error = %v, wantErr %v", tt.src, err, tt.wantErr)
		}
		if string(got) != tt.want {
			t.Errorf("LoadSecret(%+v) = %q, want %q", tt.src, got, tt.want)
		}
	}
}

func TestParseCredentialRef(t *testing.T) {
	tests := []struct {
		in      string
		want    CredentialRef
		wantErr string // fragment; "" for success
	}{
		{in: "pullsecret:argocd/dockerhub", want: CredentialRef{Source: CredsPullSecret, Namespace: "argocd", Name: "dockerhub"}},
		{in: "secret:argocd/creds#ghcr.token", want: CredentialRef{Source: CredsSecret, Namespace: "argocd", Name: "creds", Field: "ghcr.token"}},
		{in: "env:REGISTRY_SECRET", want: CredentialRef{Source: CredsEnv, Env: "REGISTRY_SECRET"}},
		{in: "ext:/app/auth/auth.sh", want: CredentialRef{Source: CredsExt, Path: "/app/auth/auth.sh"}},
		{in: "dockerconfig:/home/me/.docker/config.json", want: CredentialRef{Source: CredsDockerConfig, Path: "/home/me/.docker/config.json"}},
		{in: "foo:bar", wantErr: `unknown source "foo"; want pullsecret:, secret:, env:, ext: or dockerconfig:`},
		{in: "justatoken", wantErr: "missing source; want pullsecret:<namespace>/<name>"},
		{in: "Bob Smith:hunter2", wantErr: "unknown source; want"},
		{in: "pullsecret:dockerhub", wantErr: `pullsecret: want pullsecret:<namespace>/<name>, got "dockerhub"`},
		{in: "pullsecret:Argo_CD/x", wantErr: `invalid namespace "Argo_CD"`},
		{in: "pullsecret:argocd/x/y", wantErr: `invalid Secret name "x/y"`},
		{in: "secret:argocd/creds", wantErr: "missing #<field>"},
		{in: "secret:argocd/creds#", wantErr: "missing #<field>"},
		{in: "secret:argocd/creds#a b", wantErr: `invalid field "a b"`},
		{in: "env:", wantErr: envNameWanted},
		{in: "env:MY-VAR", wantErr: envNameWanted},
		{in: "ext:auth.sh", wantErr: `want an absolute path, got "auth.sh"`},
		{in: "dockerconfig:~/.docker/config.json", wantErr: "want an absolute path"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseCredentialRef(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseCredentialRef(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error %q repeats the password", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseCredentialRef(%q) (-want +got):\n%s", tt.in, diff)
			}
			if got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
	if !(CredentialRef{}).IsZero() || (CredentialRef{Source: CredsEnv, Env: "X"}).IsZero() {
		t.Error("IsZero is wrong")
	}
}
