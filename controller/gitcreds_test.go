package controller_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/controller"

	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

const typeLabel = "argocd.argoproj.io/secret-type"

// Argo CD's rules on the real apiserver: an exact repository Secret wins,
// else the longest repo-creds prefix; a Secret named by the annotation wins
// over both.
func TestArgoRepoCredentials(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ns := env.CreateNamespace(t, "argocd")
	secret := func(name, typ, url, user string) {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
			Data: map[string][]byte{"username": []byte(user), "password": []byte("pw-" + user)}}
		if typ != "" {
			s.Labels[typeLabel] = typ
		}
		if url != "" {
			s.Data["url"] = []byte(url)
		}
		if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret("org", "repo-creds", "https://git.example.com/org", "org")
	secret("team", "repo-creds", "https://git.example.com/org/team", "team")
	secret("exact", "repository", "https://git.example.com/org/team/app.git", "exact")
	secret("unlabelled", "", "https://git.example.com/other", "nobody")
	secret("named", "", "", "named")

	a := &controller.ArgoRepoCredentials{Client: cs, Namespace: ns}
	tests := []struct {
		url  string
		want string // username, "" for anonymous
	}{
		{"https://git.example.com/org/team/app", "exact"},
		{"https://GIT.example.com/org/team/app.git/", "exact"},
		{"https://git.example.com/org/team/other.git", "team"},
		{"https://git.example.com/org/x.git", "org"},
		{"https://git.example.com/other/x.git", ""},
	}
	for _, tt := range tests {
		c, ok, err := a.Credentials(t.Context(), tt.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := map[bool]string{true: c.Username, false: ""}[ok]; got != tt.want {
			t.Errorf("Credentials(%s) = %q, want %q", tt.url, got, tt.want)
		}
	}
	a.Use("https://git.example.com/org/x.git", ns+"/named")
	c, ok, err := a.Credentials(t.Context(), "https://git.example.com/org/x")
	if err != nil || !ok || c != (gitwb.Credentials{Username: "named", Password: "pw-named"}) {
		t.Errorf("named secret: %+v, %v, %v", c, ok, err)
	}
}
