package creds_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/registry/creds"
)

// kubeSecrets creates secrets in a fresh namespace of the shared control
// plane and returns a Resolver reading them through a typed clientset.
func kubeSecrets(t *testing.T, secrets ...*corev1.Secret) (*creds.Resolver, string) {
	t.Helper()
	if env == nil {
		t.Fatal("no control plane (TestMain did not start one)")
	}
	cs, err := kubecore.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.CreateNamespace(t, "creds")
	for _, s := range secrets {
		s.Namespace = ns
		if _, err := cs.Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Secret %s: %v", s.Name, err)
		}
	}
	return &creds.Resolver{Secrets: creds.KubeSecrets{Client: cs}}, ns
}

func TestKubeSecrets(t *testing.T) {
	r, ns := kubeSecrets(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hub"}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: dockerConfigJSON(map[string]string{
				"https://index.docker.io/v1/": "hubuser:hubpass", "registry.local:5000": "localuser:localpass",
			})}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}, Type: corev1.SecretTypeDockercfg,
			Data: map[string][]byte{corev1.DockerConfigKey: []byte(`{"quay.io":{"username":"q","password":"qpass"}}`)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token"}, Type: corev1.SecretTypeOpaque,
			StringData: map[string]string{"ghcr": "bot:ghp_token\n", "broken": "no-colon-here"}},
	)
	tests := []struct {
		ref, host string
		want      authn.AuthConfig
		wantErr   string
	}{
		{ref: "pullsecret:" + ns + "/hub", host: "docker.io", want: authn.AuthConfig{Username: "hubuser", Password: "hubpass"}},
		{ref: "pullsecret:" + ns + "/hub", host: "registry-1.docker.io", want: authn.AuthConfig{Username: "hubuser", Password: "hubpass"}},
		{ref: "pullsecret:" + ns + "/hub", host: "registry.local:5000", want: authn.AuthConfig{Username: "localuser", Password: "localpass"}},
		{ref: "pullsecret:" + ns + "/legacy", host: "quay.io", want: authn.AuthConfig{Username: "q", Password: "qpass"}},
		{ref: "secret:" + ns + "/token#ghcr", host: "ghcr.io", want: authn.AuthConfig{Username: "bot", Password: "ghp_token"}},
		{ref: "pullsecret:" + ns + "/hub", host: "ghcr.io", wantErr: "has no entry for registry ghcr.io (entries: docker.io, registry.local:5000)"},
		{ref: "pullsecret:" + ns + "/token", host: "ghcr.io", wantErr: "has neither .dockerconfigjson nor .dockercfg"},
		{ref: "secret:" + ns + "/token#missing", host: "ghcr.io", wantErr: `has no field "missing"`},
		{ref: "secret:" + ns + "/token#broken", host: "ghcr.io", wantErr: "want user:password, got no colon"},
		{ref: "secret:" + ns + "/absent#x", host: "ghcr.io", wantErr: `reading Secret ` + ns + `/absent: secrets "absent" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.ref+"@"+tt.host, func(t *testing.T) {
			a, err := r.Authenticator(t.Context(), mustParse(t, tt.ref), tt.host, 0)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "no-colon-here") {
					t.Errorf("error repeats the Secret's value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := a.Authorization()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("credentials (-want +got):\n%s", diff)
			}
		})
	}
}
