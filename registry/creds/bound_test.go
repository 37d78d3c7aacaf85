package creds_test

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/registry/creds"
)

// listedForQuay is the operator's word that Secret "listed" goes to quay.io.
type listedForQuay struct{}

func (listedForQuay) SendsTo(ref creds.Ref, host string) bool {
	return ref.Name == "listed" && host == "quay.io"
}

// A secret: reference an annotation names goes only to the registry its
// Secret's url names, or to one the operator's config sends it to
// (Resolver.Bound): an annotation cannot make crowsnest send it anywhere
// else. The operator's own references (no Bound) are not bound.
func TestSecretFieldBoundToItsRegistry(t *testing.T) {
	secret := func(name, url string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name},
			Data: map[string][]byte{"token": []byte("robot:s3cret")}}
		if url != "" {
			s.Data["url"] = []byte(url)
		}
		return s
	}
	secrets := secretMap{
		"team-a/bare":   secret("bare", ""),
		"team-a/ghcr":   secret("ghcr", "ghcr.io"),
		"team-a/https":  secret("https", "https://registry.example.com/v2/"),
		"team-a/listed": secret("listed", ""),
	}
	tenant := &creds.Resolver{Secrets: secrets, Bound: listedForQuay{}}
	tests := []struct {
		ref, host string
		wantErr   bool
	}{
		{"secret:team-a/bare#token", "ghcr.io", true},
		{"secret:team-a/ghcr#token", "ghcr.io", false},
		{"secret:team-a/ghcr#token", "evil.example.com", true},
		{"secret:team-a/https#token", "registry.example.com", false},
		{"secret:team-a/https#token", "registry.example.com.evil.io", true},
		{"secret:team-a/listed#token", "quay.io", false},
		{"secret:team-a/listed#token", "ghcr.io", true},
	}
	for _, tt := range tests {
		auth, err := tenant.Authenticator(t.Context(), mustParse(t, tt.ref), tt.host, 0)
		if err == nil {
			_, err = auth.Authorization()
		}
		switch {
		case tt.wantErr && !errors.Is(err, creds.ErrUnbound):
			t.Errorf("%s for %s: error %v, want ErrUnbound", tt.ref, tt.host, err)
		case !tt.wantErr && err != nil:
			t.Errorf("%s for %s: %v", tt.ref, tt.host, err)
		}
	}
	operator := &creds.Resolver{Secrets: secrets}
	if _, err := operator.Authenticator(t.Context(), mustParse(t, "secret:team-a/bare#token"), "ghcr.io", 0); err != nil {
		t.Errorf("the operator's reference, unbound: %v", err)
	}
}
