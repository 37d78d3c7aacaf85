package repocreds_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/repocreds"
)

// The Secret an Application names (write-back-method git:secret:ns/name)
// is found for its repository when the Application's URL carries
// credentials too: Use hears that URL, the writer asks with the one it
// stripped them from.
func TestArgoRepoCredentialsNamedSecretForAURLWithCredentials(t *testing.T) {
	cs := kubecoretest.New(t, env.Config)
	ns := env.CreateNamespace(t, "argocd")
	if _, err := cs.Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "named"},
		Data:       map[string][]byte{"username": []byte("named"), "password": []byte("pw-named"), "url": []byte("https://git.example.com/org/x")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a := &repocreds.ArgoCD{Client: cs, Namespace: ns}
	withCreds := "https://bot:old-token@git.example.com/org/x.git"
	c, ok, err := a.Credentials(gitwb.WithCredentialsSecret(t.Context(), ns+"/named"), gitwb.RepoID(withCreds))
	if err != nil || !ok || c != (gitwb.Credentials{Username: "named", Password: "pw-named"}) {
		t.Errorf("Credentials(%s) = %+v, %v, %v; want the named Secret's", gitwb.RepoID(withCreds), c, ok, err)
	}
}
