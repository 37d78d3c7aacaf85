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

func TestForRegistriesMatchesWholeHostsOnly(t *testing.T) {
	list := config.RegistryList{
		{Prefix: "docker.io", Credentials: mustParse(t, "env:HUB"), CredsExpire: config.Duration{Duration: time.Hour}},
		{Prefix: "ghcr.io/org", Credentials: mustParse(t, "env:GHCR")},
	}
	ha := creds.ForRegistries(&creds.Resolver{}, list)
	tests := []struct {
		host       string
		wantRef    string
		wantExpire time.Duration
	}{
		{host: "index.docker.io", wantRef: "env:HUB", wantExpire: time.Hour},
		{host: "ghcr.io", wantRef: ""},
		{host: "quay.io", wantRef: ""},
	}
	for _, tt := range tests {
		ref, expire := ha.Lookup(tt.host)
		if ref.String() != tt.wantRef || expire != tt.wantExpire {
			t.Errorf("Lookup(%q) = %q, %s; want %q, %s", tt.host, ref, expire, tt.wantRef, tt.wantExpire)
		}
	}
}
