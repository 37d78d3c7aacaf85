package creds_test

import (
	"cmp"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/creds"
)

// registryWith starts an OCI registry demanding bearer tokens for
// robot:password, holding app:1.0.
func registryWith(t *testing.T, password string) *testreg.OCI {
	t.Helper()
	reg := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBearer, Username: "robot", Password: password})
	reg.Push(t, "team/app:1.0", testreg.Image(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), ""))
	return reg
}

func listTags(t *testing.T, c *registry.Client, reg *testreg.OCI) ([]string, error) {
	t.Helper()
	repo, err := registry.ParseRepo(reg.Host() + "/team/app")
	if err != nil {
		t.Fatal(err)
	}
	return c.ListTags(t.Context(), repo)
}

// TestEveryFormAgainstARegistry lists tags through the registry client
// with credentials from each source, found by the registries config.
func TestEveryFormAgainstARegistry(t *testing.T) {
	const pass = "s3cret-registry-password"
	reg := registryWith(t, pass)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, dockerConfigJSON(map[string]string{"http://" + reg.Host() + "/v2/": "robot:" + pass}), 0o600); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "creds.sh", "echo robot:"+pass)
	resolver, ns := kubeSecrets(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: dockerConfigJSON(map[string]string{reg.Host(): "robot:" + pass})}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, StringData: map[string]string{"creds": "robot:" + pass}},
	)
	resolver.LookupEnv = func(string) (string, bool) { return "robot:" + pass, true }
	for _, ref := range []string{"", "env:REGISTRY_CREDS", "ext:" + script, "dockerconfig:" + cfgPath,
		"pullsecret:" + ns + "/pull", "secret:" + ns + "/plain#creds"} {
		t.Run(cmp.Or(ref, "anonymous"), func(t *testing.T) {
			list := config.RegistryList{{Prefix: reg.Host(), Credentials: mustParse(t, ref)}}
			c := &registry.Client{Auth: creds.ForRegistries(resolver, list)}
			got, err := listTags(t, c, reg)
			if ref == "" {
				if err == nil || !strings.Contains(err.Error(), "401") {
					t.Fatalf("anonymous: tags %v, error %v; want a 401", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff([]string{"1.0"}, got); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRotatedPasswordIsReadAgain rotates the registry's password and the
// script's answer: the client's one retry after a 401 invalidates the
// cached credentials, and the script runs again.
func TestRotatedPasswordIsReadAgain(t *testing.T) {
	reg := registryWith(t, "first")
	dir := t.TempDir()
	passFile := filepath.Join(dir, "password")
	count := filepath.Join(dir, "count")
	if err := os.WriteFile(passFile, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := writeScript(t, dir, "creds.sh", `echo run >> "`+count+`"; echo "robot:$(cat "`+passFile+`")"`)
	list := config.RegistryList{{Prefix: reg.Host(), Credentials: mustParse(t, "ext:"+script)}}
	c := &registry.Client{Auth: creds.ForRegistries(&creds.Resolver{}, list)}
	if _, err := listTags(t, c, reg); err != nil {
		t.Fatal(err)
	}
	reg.SetCredentials("robot", "second")
	if err := os.WriteFile(passFile, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := listTags(t, c, reg); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if data, _ := os.ReadFile(count); strings.Count(string(data), "\n") != 2 {
		t.Errorf("script ran %d times, want 2 (once, then once after the 401)", strings.Count(string(data), "\n"))
	}
}

// Two registries entries with path prefixes on one host, each with its
// own credentials, against a registry that gives each path its own robot:
// each repository is listed with its entry's credentials. The same
// credentials for the whole host reach only one of them, so the registry
// really tells them apart.
func TestPathPrefixesGetTheirOwnCredentials(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBasic, Username: "admin", Password: "admin-pw",
		RepoCredentials: map[string]testreg.Credentials{
			"team-a": {Username: "robot-a", Password: "pw-a"},
			"team-b": {Username: "robot-b", Password: "pw-b"},
		}})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reg.Push(t, "team-a/app:1.0", testreg.Image(t, t0, ""))
	reg.Push(t, "team-b/app:2.0", testreg.Image(t, t0, ""))
	reg.Push(t, "team-b/app:2.1", testreg.Image(t, t0, ""))
	env := map[string]string{"TEAM_A": "robot-a:pw-a", "TEAM_B": "robot-b:pw-b"}
	resolver := &creds.Resolver{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	tags := func(c *registry.Client, path string) ([]string, error) {
		t.Helper()
		repo, err := registry.ParseRepo(reg.Host() + "/" + path)
		if err != nil {
			t.Fatal(err)
		}
		return c.Tags(t.Context(), repo, 0)
	}

	list := config.RegistryList{
		{Prefix: reg.Host() + "/team-a", Credentials: mustParse(t, "env:TEAM_A")},
		{Prefix: reg.Host() + "/team-b", Credentials: mustParse(t, "env:TEAM_B")},
	}
	c := &registry.Client{Auth: creds.ForRegistries(resolver, list)}
	for path, want := range map[string][]string{"team-a/app": {"1.0"}, "team-b/app": {"2.0", "2.1"}} {
		for range 2 { // the second time from the tag cache
			got, err := tags(c, path)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("%s tags (-want +got):\n%s", path, diff)
			}
		}
	}
	if n := reg.Count("list", ""); n != 2 {
		t.Errorf("%d tag-list requests, want 2 (one per repository, then its cache)", n)
	}

	hostWide := config.RegistryList{{Prefix: reg.Host(), Credentials: mustParse(t, "env:TEAM_A")}}
	c = &registry.Client{Auth: creds.ForRegistries(resolver, hostWide)}
	if _, err := tags(c, "team-a/app"); err != nil {
		t.Errorf("team-a with team-a's credentials: %v", err)
	}
	if got, err := tags(c, "team-b/app"); err == nil || !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Errorf("team-b with team-a's credentials: tags %v, error %v; want UNAUTHORIZED", got, err)
	}
}

func TestForRegistriesMatchesLongestPrefix(t *testing.T) {
	list := config.RegistryList{
		{Prefix: "docker.io", Credentials: mustParse(t, "env:HUB"), CredsExpire: config.Duration{Duration: time.Hour}},
		{Prefix: "ghcr.io/org", Credentials: mustParse(t, "env:GHCR_ORG")},
		{Prefix: "ghcr.io/org/team-a", Credentials: mustParse(t, "env:GHCR_A"), CredsExpire: config.Duration{Duration: time.Minute}},
	}
	ra := creds.ForRegistries(&creds.Resolver{}, list)
	tests := []struct {
		repo       string
		wantRef    string
		wantExpire time.Duration
	}{
		{repo: "docker.io/library/nginx", wantRef: "env:HUB", wantExpire: time.Hour},
		{repo: "index.docker.io/team/app", wantRef: "env:HUB", wantExpire: time.Hour},
		{repo: "ghcr.io/org/app", wantRef: "env:GHCR_ORG"},
		{repo: "ghcr.io/org/team-a/app", wantRef: "env:GHCR_A", wantExpire: time.Minute},
		{repo: "ghcr.io/org/team-ab/app", wantRef: "env:GHCR_ORG"},
		{repo: "ghcr.io/other/app", wantRef: ""},
		{repo: "quay.io/org/app", wantRef: ""},
	}
	for _, tt := range tests {
		ref, expire := ra.Registries.CredentialsFor(tt.repo)
		if ref.String() != tt.wantRef || expire != tt.wantExpire {
			t.Errorf("Lookup(%q) = %q, %s; want %q, %s", tt.repo, ref, expire, tt.wantRef, tt.wantExpire)
		}
	}
}
