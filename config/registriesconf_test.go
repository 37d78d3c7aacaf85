package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestParseRegistriesConf(t *testing.T) {
	tests := []struct {
		name string
		file string // under testdata/
		want RegistryList
	}{
		{name: "argocd-image-updater documentation example", file: "registries.conf",
			want: RegistryList{
				{Name: "Docker Hub", Prefix: "docker.io", APIURL: "https://registry-1.docker.io",
					Credentials:      CredentialRef{Source: CredsSecret, Namespace: "foo", Name: "bar", Field: "creds"},
					DefaultNamespace: "library", Default: true, RateLimit: 20, MaxConcurrency: 8},
				{Name: "Google Container Registry", Prefix: "gcr.io", APIURL: "https://gcr.io",
					Credentials: CredentialRef{Source: CredsPullSecret, Namespace: "foo", Name: "bar"}, RateLimit: 20, MaxConcurrency: 8},
				{Name: "RedHat Quay", Prefix: "quay.io", APIURL: "https://quay.io", Insecure: true,
					Credentials: CredentialRef{Source: CredsEnv, Env: "REGISTRY_SECRET"}, RateLimit: 10, MaxConcurrency: 8},
				{Name: "GitHub Container Registry", Prefix: "ghcr.io", APIURL: "https://ghcr.io",
					Credentials: CredentialRef{Source: CredsExt, Path: "/app/auth/ghcr.sh"}, CredsExpire: Duration{12 * time.Hour},
					CAFile: "/app/config/certs/ghcr-ca.pem", RateLimit: 20, MaxConcurrency: 8},
			}},
		{name: "old style: no prefix makes the default registry", file: "registries-noprefix.conf",
			want: RegistryList{
				{Name: "Docker Hub", Prefix: "docker.io", APIURL: "https://registry-1.docker.io", Default: true, RateLimit: 20, MaxConcurrency: 8},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseRegistriesConf(data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseRegistriesConf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRegistriesConfErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []FieldError
	}{
		{name: "unknown key with line", doc: "registries:\n- name: a\n  prefix: a.io\n  pign: yes\n",
			want: []FieldError{{Path: "registries[0].pign", Line: 4, Msg: `unknown field (did you mean "ping"?)`}}},
		{name: "crowsnest spelling is not the conf's", doc: "registries:\n- prefix: a.io\n  apiURL: https://a.io\n",
			want: []FieldError{{Path: "registries[0].apiURL", Line: 3, Msg: `unknown field (did you mean "api_url"?)`}}},
		{name: "unknown top-level key", doc: "registry:\n- prefix: a.io\n",
			want: []FieldError{{Path: "registry", Line: 1, Msg: "unknown field"}}},
		{name: "bad bool", doc: "registries:\n- prefix: a.io\n  insecure: maybe\n",
			want: []FieldError{{Path: "registries[0].insecure", Line: 3, Msg: `expected true or false (or yes/no), got string "maybe"`}}},
		{name: "limit not an integer", doc: "registries:\n- prefix: a.io\n  limit: 2.5\n",
			want: []FieldError{{Path: "registries[0].limit", Line: 3, Msg: "expected an integer, got number 2.5"}}},
		{name: "negative limit", doc: "registries:\n- prefix: a.io\n  limit: -3\n",
			want: []FieldError{{Path: "registries[0].limit", Line: 3, Msg: "must be positive"}}},
		{name: "bad api url named by the conf key", doc: "registries:\n- prefix: a.io\n  api_url: ftp://a.io\n",
			want: []FieldError{{Path: "registries[0].api_url", Line: 3, Msg: "want an http:// or https:// URL"}}},
		{name: "no prefix and no api url", doc: "registries:\n- name: nothing\n",
			want: []FieldError{{Path: "registries[0].prefix", Line: 2, Msg: "required"}}},
		{name: "bad credsexpire", doc: "registries:\n- prefix: a.io\n  credsexpire: 3600\n",
			want: []FieldError{{Path: "registries[0].credsexpire", Line: 3, Msg: "add a unit"}}},
		{name: "bad tagsortmode", doc: "registries:\n- prefix: a.io\n  tagsortmode: newest\n",
			want: []FieldError{{Path: "registries[0].tagsortmode", Line: 3, Msg: `unsupported value "newest"`}}},
		{name: "bad defaultns", doc: "registries:\n- prefix: a.io\n  defaultns: Lib\n",
			want: []FieldError{{Path: "registries[0].defaultns", Line: 3, Msg: "invalid repository path component"}}},
		{name: "bad ca_data", doc: "registries:\n- prefix: a.io\n  ca_data: nope\n",
			want: []FieldError{{Path: "registries[0].ca_data", Line: 3, Msg: "no PEM certificate found"}}},
		{name: "two defaults", doc: "registries:\n- {prefix: a.io, default: yes}\n- {prefix: b.io, default: true}\n",
			want: []FieldError{{Path: "registries[1].default", Line: 3, Msg: "only one registry may be the default"}}},
		{name: "path entry's CA named by the conf key", doc: "registries:\n- {prefix: a.io, ca_file: /a.pem}\n- {prefix: a.io/b, ca_file: /b.pem}\n",
			want: []FieldError{{Path: "registries[1].ca_file", Line: 3, Msg: "differs from registries[0] (prefix a.io)"}}},
		{name: "duplicate prefix", doc: "registries:\n- {prefix: a.io}\n- {prefix: A.io}\n",
			want: []FieldError{{Path: "registries[1].prefix", Line: 3, Msg: `duplicate prefix "A.io"`}}},
		{name: "credentials pasted as user:password", doc: "registries:\n- prefix: a.io\n  credentials: 'bob smith:hunter2'\n",
			want: []FieldError{{Path: "registries[0].credentials", Line: 3, Msg: "unknown source; want"}}},
		{name: "not a mapping", doc: "- a\n",
			want: []FieldError{{Line: 1, Msg: "expected a mapping, got a list"}}},
		{name: "not YAML", doc: "registries: [\n",
			want: []FieldError{{Msg: "not valid YAML"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRegistriesConf([]byte(tt.doc))
			if err == nil {
				t.Fatalf("ParseRegistriesConf() = %+v, want an error", got)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error repeats a password: %v", err)
			}
			if diff := cmp.Diff(tt.want, gotFieldErrors(t, err, tt.want)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nfull error:\n%v", diff, err)
			}
		})
	}
}

func TestParseRegistriesConfEmpty(t *testing.T) {
	for _, doc := range []string{"", "# nothing yet\n", "registries: []\n", "registries:\n"} {
		got, err := ParseRegistriesConf([]byte(doc))
		if err != nil || len(got) != 0 {
			t.Errorf("ParseRegistriesConf(%q) = %v, %v; want no registries and no error", doc, got, err)
		}
	}
}

func TestRegistriesResolved(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ca.pem"), testCA())
	writeFile(t, filepath.Join(dir, "registries.conf"), `registries:
- name: Docker Hub (conf)
  prefix: docker.io
  api_url: https://registry-1.docker.io
  credentials: pullsecret:argocd/hub
- name: Quay (conf)
  prefix: quay.io
  default: true
  ca_file: ca.pem
`)
	r := Registries{ConfFile: "registries.conf", List: RegistryList{
		{Name: "Docker Hub (list)", Prefix: "index.docker.io", RateLimit: 5, MaxConcurrency: 1},
		{Name: "Local", Prefix: "registry.local:5000", Default: true, CAFile: "ca.pem", RateLimit: 20, MaxConcurrency: 8},
	}}
	got, err := r.Resolved(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := RegistryList{
		{Name: "Docker Hub (list)", Prefix: "index.docker.io", RateLimit: 5, MaxConcurrency: 1},
		{Name: "Quay (conf)", Prefix: "quay.io", CAFile: filepath.Join(dir, "ca.pem"), RateLimit: 20, MaxConcurrency: 8},
		{Name: "Local", Prefix: "registry.local:5000", Default: true, CAFile: filepath.Join(dir, "ca.pem"), RateLimit: 20, MaxConcurrency: 8},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Resolved (-want +got):\n%s", diff)
	}
	if r.List[1].CAFile != "ca.pem" {
		t.Errorf("Resolved changed the config's own list: caFile = %q", r.List[1].CAFile)
	}
	tlsCfg, err := got[2].TLSConfig()
	if err != nil || tlsCfg == nil || tlsCfg.RootCAs == nil {
		t.Errorf("TLSConfig() = %v, %v; want a config with the CA", tlsCfg, err)
	}
	if tlsCfg, err := got[0].TLSConfig(); tlsCfg != nil || err != nil {
		t.Errorf("TLSConfig() without CAs = %v, %v; want nil, nil", tlsCfg, err)
	}
}

func TestRegistriesResolvedErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "bad.conf"), "registries:\n- prefix: a.io\n  limt: 3\n")
	writeFile(t, filepath.Join(dir, "notca.pem"), "hello\n")
	writeFile(t, filepath.Join(dir, "ghcr.conf"), "registries:\n- {prefix: ghcr.io, credentials: 'env:GHCR'}\n")
	tests := []struct {
		name string
		r    Registries
		want []string // fragments
	}{
		{name: "missing conf file", r: Registries{ConfFile: "nope.conf"},
			want: []string{"registries.confFile", "nope.conf"}},
		{name: "conf file with an unknown key", r: Registries{ConfFile: filepath.Join(dir, "bad.conf")},
			want: []string{"registries.confFile", "bad.conf", `line 3: registries[0].limt: unknown field (did you mean "limit"?)`}},
		{name: "ca file that is not PEM", r: Registries{List: RegistryList{{Prefix: "a.io", CAFile: "notca.pem"}}},
			want: []string{"registry a.io", "no PEM certificate found"}},
		{name: "missing ca file", r: Registries{List: RegistryList{{Prefix: "a.io", CAFile: "missing.pem"}}},
			want: []string{"registry a.io", "reading caFile"}},
		{name: "a list entry's settings differ from the conf's entry for its host",
			r:    Registries{ConfFile: filepath.Join(dir, "ghcr.conf"), List: RegistryList{{Prefix: "ghcr.io/team-b", Insecure: true, RateLimit: 20, MaxConcurrency: 8}}},
			want: []string{"registry ghcr.io/team-b: insecure differs from registry ghcr.io", "per registry host"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.r.Resolved(dir)
			if err == nil {
				t.Fatal("Resolved() succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func FuzzParseRegistriesConf(f *testing.F) {
	for _, name := range []string{"registries.conf", "registries-noprefix.conf"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{"", "registries: [", "- a", "registries: {a: b}", "registries:\n- &a {prefix: a.io}\n- *a\n",
		"registries:\n- {api_url: 'http://[::1]:5000', default: on, limit: 0x10, credsexpire: 1d}\n",
		"registries:\n- {prefix: a.io/b/c, credentials: 'secret:a/b#c', tagsortmode: latest-last, ping: n}\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := ParseRegistriesConf(data)
		if err != nil {
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Errors) == 0 {
				t.Fatalf("error %v is not a non-empty *ValidationError", err)
			}
			return
		}
		// Whatever parses validates again, and every entry matches itself.
		errs := &fieldErrors{}
		list.validate("registries", confKeys, errs)
		if err := errs.err(); err != nil {
			t.Fatalf("accepted a list that does not validate: %v", err)
		}
		for i := range list {
			if got := list.Match(list[i].Prefix + "/x"); got == nil {
				t.Fatalf("Match(%q) = nil, want an entry", list[i].Prefix+"/x")
			}
		}
	})
}
