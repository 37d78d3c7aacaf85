package controller

import (
	"context"
	"fmt"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// Argo CD's labels for repository credentials.
const (
	argoSecretTypeLabel = "argocd.argoproj.io/secret-type"
	argoRepository      = "repository"
	argoRepoCreds       = "repo-creds"
)

// ArgoRepoCredentials finds Git credentials the way Argo CD does: a
// `repository` Secret whose url equals the repository's, else the
// `repo-creds` Secret with the longest url prefix, in Namespace (Argo CD's).
// An Application's write-back-method git:secret:<ns>/<name> names a Secret
// (username and password) that wins for its repository.
type ArgoRepoCredentials struct {
	Client    kubernetes.Interface
	Namespace string

	mu        sync.Mutex
	overrides map[string]string // repository URL -> "ns/name"
}

var _ gitwb.CredentialsSource = (*ArgoRepoCredentials)(nil)

// Use makes the Secret ns/name the credentials of repoURL.
func (a *ArgoRepoCredentials) Use(repoURL, secret string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.overrides == nil {
		a.overrides = map[string]string{}
	}
	a.overrides[normalizeRepoURL(repoURL)] = secret
}

// Credentials implements gitwb.CredentialsSource.
func (a *ArgoRepoCredentials) Credentials(ctx context.Context, repoURL string) (gitwb.Credentials, bool, error) {
	want := normalizeRepoURL(repoURL)
	a.mu.Lock()
	named := a.overrides[want]
	a.mu.Unlock()
	if named != "" {
		ns, name, _ := strings.Cut(named, "/")
		s, err := a.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return gitwb.Credentials{}, false, fmt.Errorf("reading git credentials secret %s: %w", named, err)
		}
		return gitwb.Credentials{Username: string(s.Data["username"]), Password: string(s.Data["password"])}, true, nil
	}
	list, err := a.Client.CoreV1().Secrets(a.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: argoSecretTypeLabel + " in (" + argoRepository + "," + argoRepoCreds + ")",
	})
	if err != nil {
		return gitwb.Credentials{}, false, fmt.Errorf("listing Argo CD repository secrets in %s: %w", a.Namespace, err)
	}
	var best gitwb.Credentials
	bestLen := -1
	for i := range list.Items {
		s := &list.Items[i]
		u := normalizeRepoURL(string(s.Data["url"]))
		if u == "" {
			continue
		}
		c := gitwb.Credentials{Username: string(s.Data["username"]), Password: string(s.Data["password"])}
		switch s.Labels[argoSecretTypeLabel] {
		case argoRepository:
			if u == want {
				return c, true, nil
			}
		case argoRepoCreds:
			if strings.HasPrefix(want, u) && len(u) > bestLen {
				best, bestLen = c, len(u)
			}
		}
	}
	return best, bestLen >= 0, nil
}

// normalizeRepoURL compares repository URLs as Argo CD does, ignoring case
// and a trailing ".git" or "/".
func normalizeRepoURL(u string) string {
	u = strings.ToLower(strings.TrimSpace(u))
	u = strings.TrimSuffix(u, "/")
	return strings.TrimSuffix(u, ".git")
}
