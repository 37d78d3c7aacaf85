package creds

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// ErrReservedSecret says a Secret named by an Application's annotation is
// one Argo CD or Kubernetes keeps for itself.
var ErrReservedSecret = errors.New("reserved for Argo CD or Kubernetes")

// argoSecretTypeLabel marks Argo CD's cluster and repository Secrets.
const argoSecretTypeLabel = "argocd.argoproj.io/secret-type"

// argoSecretNames are Secrets Argo CD keeps its own keys in.
var argoSecretNames = []string{"argocd-secret", "argocd-notifications-secret", "argocd-initial-admin-secret",
	"argocd-redis", "argocd-image-updater-secret"}

// TenantSecrets reads the Secrets an Application's annotations name. Even
// in the Application's own namespace it refuses those Argo CD and
// Kubernetes keep for themselves (Argo CD's cluster and repository
// Secrets, its own key Secrets, ServiceAccount tokens) unless Trust says
// the operator's config names them: in Argo CD's namespace, an annotation
// author must not reach Argo CD's cluster bearer tokens.
type TenantSecrets struct {
	Secrets SecretGetter
	// Trust, when set, says which Secrets the operator's config names.
	Trust Trust
}

// Trust reports whether the operator's config names the Secret
// namespace/name as credentials (setup.Registries).
type Trust interface {
	TrustsSecret(namespace, name string) bool
}

var _ SecretGetter = (*TenantSecrets)(nil)

// Get reads the Secret namespace/name unless it is reserved.
func (t *TenantSecrets) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s, err := t.Secrets.Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if t.Trust != nil && t.Trust.TrustsSecret(namespace, name) {
		return s, nil
	}
	if err := CheckReserved(s); err != nil {
		return nil, err
	}
	return s, nil
}

// CheckReserved refuses a Secret Argo CD or Kubernetes keeps for itself:
// a ServiceAccount token, an Argo CD cluster or repository Secret, or one
// of Argo CD's own key Secrets.
func CheckReserved(s *corev1.Secret) error {
	namespace, name := s.Namespace, s.Name
	switch {
	case s.Type == corev1.SecretTypeServiceAccountToken:
		return fmt.Errorf("%w: %s/%s is a ServiceAccount token", ErrReservedSecret, namespace, name)
	case s.Labels[argoSecretTypeLabel] != "":
		return fmt.Errorf("%w: %s/%s is an Argo CD %s Secret (label %s); name it in the config's tenancy.credentials to allow it",
			ErrReservedSecret, namespace, name, s.Labels[argoSecretTypeLabel], argoSecretTypeLabel)
	case slices.Contains(argoSecretNames, name):
		return fmt.Errorf("%w: %s/%s holds Argo CD's own keys", ErrReservedSecret, namespace, name)
	}
	return nil
}
