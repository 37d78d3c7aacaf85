package repocreds_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/registry/creds"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/repocreds"
)

const typeLabel = "argocd.argoproj.io/secret-type"

// Argo CD's rules on the real apiserver: an exact repository Secret wins,
// else the longest repo-creds prefix; a Secret named by the annotation wins
// over both.
func TestArgoRepoCredentials(t *testing.T) {
	cs := kubecoretest.New(t, env.Config)
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
		if _, err := cs.Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret("org", "repo-creds", "https://git.example.com/org", "org")
	secret("team", "repo-creds", "https://git.example.com/org/team", "team")
	secret("exact", "repository", "https://git.example.com/org/team/app.git", "exact")
	secret("unlabelled", "", "https://git.example.com/other", "nobody")
	secret("named", "", "https://git.example.com/org/", "named")
	secret("host", "repo-creds", "https://hosted.example.com/", "host")

	a := &repocreds.ArgoCD{Client: cs, Namespace: ns}
	tests := []struct {
		url  string
		want string // username, "" for anonymous
	}{
		{"https://git.example.com/org/team/app", "exact"},
		{"https://GIT.example.com/org/team/app.git/", "exact"},
		{"https://git.example.com/org/team/other.git", "team"},
		{"https://git.example.com/org/x.git", "org"},
		{"https://git.example.com/other/x.git", ""},
		// A plain prefix as Argo CD matches, but never onto another
		// host.
		{"https://hosted.example.com/x/y.git", "host"},
		{"https://hosted.example.com.evil.io/x.git", ""},
		{"https://git.example.com/organisation/x.git", "org"},
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
	c, ok, err := a.Credentials(gitwb.WithCredentialsSecret(t.Context(), ns+"/named"), "https://git.example.com/org/x")
	if err != nil || !ok || c != (gitwb.Credentials{Username: "named", Password: "pw-named"}) {
		t.Errorf("named secret: %+v, %v, %v", c, ok, err)
	}
	// A Secret Argo CD keeps for itself, named by git:secret:, is refused
	// unless the operator's config names it.
	if _, _, err := a.Credentials(gitwb.WithCredentialsSecret(t.Context(), ns+"/org"), "https://evil.example.com/x"); !errors.Is(err, creds.ErrReservedSecret) {
		t.Errorf("git:secret: naming Argo CD's repo-creds Secret: error %v, want ErrReservedSecret", err)
	}
	trusting := &repocreds.ArgoCD{Client: cs, Namespace: ns, Trust: trustOne{ns, "org"}}
	if c, ok, err := trusting.Credentials(gitwb.WithCredentialsSecret(t.Context(), ns+"/org"), "https://git.example.com/org/x"); err != nil || !ok || c.Username != "org" {
		t.Errorf("a reserved Secret the config names: %+v, %v, %v", c, ok, err)
	}
}

// SSH on the real apiserver: sshPrivateKey is read from repository,
// repo-creds and named Secrets; scp-like and ssh:// URLs match each other
// (also as prefixes); host keys come from argocd-ssh-known-hosts-cm and the
// known_hosts file, only for SSH.
func TestArgoRepoCredentialsSSH(t *testing.T) {
	cs := kubecoretest.New(t, env.Config)
	ns := env.CreateNamespace(t, "argocd")
	secret := func(name, typ, url string, data map[string]string) {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}, StringData: data}
		if typ != "" {
			s.Labels[typeLabel] = typ
		}
		if url != "" {
			s.StringData["url"] = url
		}
		if _, err := cs.Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	key := func(name string) map[string]string { return map[string]string{"sshPrivateKey": "key-" + name} }
	secret("org", "repo-creds", "git@git.example.com:org", key("org"))
	secret("team", "repo-creds", "ssh://git@git.example.com/org/team", key("team"))
	secret("exact", "repository", "ssh://git@git.example.com:22/org/team/app.git", key("exact"))
	secret("https", "repo-creds", "https://git.example.com/org", map[string]string{"username": "u", "password": "p", "sshPrivateKey": "key-https"})
	secret("named", "", "git@git.example.com:org/x", key("named"))

	a := &repocreds.ArgoCD{Client: cs, Namespace: ns}
	tests := []struct {
		url  string
		want string // sshPrivateKey, "" for none
	}{
		{"git@git.example.com:org/x.git", "key-org"},
		{"ssh://git@git.example.com/org/x", "key-org"},
		{"git+ssh://git@git.example.com:22/org/x", "key-org"},
		{"git@git.example.com:org/team/y.git", "key-team"},
		{"ssh://git@git.example.com/org/team/y", "key-team"},
		{"git@GIT.example.com:org/team/app", "key-exact"},
		{"ssh://git@git.example.com/org/team/app.git/", "key-exact"},
		{"ssh://git@other.example.com/org/x", ""},
		{"ssh://git@git.example.com/organisation-b/x", "key-org"}, // a plain prefix, as Argo CD matches
	}
	for _, tt := range tests {
		c, ok, err := a.Credentials(t.Context(), tt.url)
		if err != nil {
			t.Fatalf("Credentials(%s): %v", tt.url, err)
		}
		if got := map[bool]string{true: c.SSHPrivateKey, false: ""}[ok]; got != tt.want {
			t.Errorf("Credentials(%s) key = %q, want %q", tt.url, got, tt.want)
		}
		if c.SSHKnownHosts != "" {
			t.Errorf("Credentials(%s) has known hosts %q without a ConfigMap or file", tt.url, c.SSHKnownHosts)
		}
	}

	// Known hosts: the ConfigMap and the file, for SSH URLs only.
	cmLine := "git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
	fileLine := "[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: repocreds.KnownHostsConfigMap}, Data: map[string]string{repocreds.KnownHostsKey: cmLine}}
	if _, err := cs.ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.KnownHostsFile = filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(a.KnownHostsFile, []byte(fileLine), 0o600); err != nil {
		t.Fatal(err)
	}
	c, _, err := a.Credentials(t.Context(), "git@git.example.com:org/x.git")
	if err != nil || !strings.Contains(c.SSHKnownHosts, cmLine) || !strings.Contains(c.SSHKnownHosts, fileLine) {
		t.Errorf("known hosts %q, %v; want the ConfigMap's and the file's lines", c.SSHKnownHosts, err)
	}
	c, ok, err := a.Credentials(t.Context(), "https://git.example.com/org/x.git")
	if err != nil || !ok || c.Username != "u" || c.SSHKnownHosts != "" {
		t.Errorf("HTTPS: %+v, %v, %v; want username u and no known hosts", c, ok, err)
	}

	if c, ok, err := a.Credentials(gitwb.WithCredentialsSecret(t.Context(), ns+"/named"), "ssh://git@git.example.com/org/x"); err != nil || !ok || c.SSHPrivateKey != "key-named" {
		t.Errorf("named secret: %+v, %v, %v", c, ok, err)
	}

	// A bad line is an error naming where it is.
	cm.Data[repocreds.KnownHostsKey] = cmLine + "git.example.com ssh-ed25519 not-base64!\n"
	if _, err := cs.ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Credentials(t.Context(), "git@git.example.com:org/x.git"); err == nil ||
		!strings.Contains(err.Error(), "ConfigMap "+ns+"/argocd-ssh-known-hosts-cm ssh_known_hosts:2:") {
		t.Errorf("bad ConfigMap line: %v", err)
	}
	a.KnownHostsFile = filepath.Join(t.TempDir(), "missing")
	if _, err := gitwb.ReadKnownHostsFile(a.KnownHostsFile); err == nil || !strings.Contains(err.Error(), a.KnownHostsFile) {
		t.Errorf("missing file: %v", err)
	}
}

// End to end: a Git writer with Argo CD's credentials pushes over SSH with
// the key of a repo-creds Secret and the host key of
// argocd-ssh-known-hosts-cm; with the ConfigMap gone the host is refused.
func TestGitWriteBackOverSSHWithArgoCDSecrets(t *testing.T) {
	cs := kubecoretest.New(t, env.Config)
	ns := env.CreateNamespace(t, "argocd")
	srv := testgit.Start(t, testgit.Options{})
	srv.CreateRepo(t, "apps")
	srv.Seed(t, "apps", "main", map[string]string{"web/kustomization.yaml": "images:\n  - name: ghcr.io/acme/web\n    newTag: 1.0.0\n"}, "seed")
	key, pub := testgit.NewSSHKey(t)
	x := srv.StartSSH(t, pub)

	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "ssh-creds", Labels: map[string]string{typeLabel: "repo-creds"}},
		StringData: map[string]string{"url": "ssh://git@" + x.Addr, "sshPrivateKey": key},
	}
	if _, err := cs.Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: repocreds.KnownHostsConfigMap}, Data: map[string]string{repocreds.KnownHostsKey: x.KnownHosts()}}
	if _, err := cs.ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w := &gitwb.Writer{
		CacheDir:    t.TempDir(),
		Credentials: &repocreds.ArgoCD{Client: cs, Namespace: ns},
		MaxAttempts: 1,
		Metrics:     gitwb.NewMetrics(prometheus.NewRegistry()),
	}
	change := func(tag string) []gitwb.Change {
		return []gitwb.Change{{
			App: "web", RepoURL: x.RepoURL("apps"), Branch: "main", Path: "web",
			Target: gitwb.Target{Kind: gitwb.TargetKustomization},
			Images: []gitwb.Image{{Name: "ghcr.io/acme/web", NewTag: tag}},
		}}
	}
	res, err := w.Apply(t.Context(), change("1.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := srv.ReadFile(t, "apps", "main", "web/kustomization.yaml"); !strings.Contains(got, "newTag: 1.1.0") || res[0].CommitSHA != srv.Head(t, "apps", "main") {
		t.Fatalf("after push: %q, result %+v", got, res[0])
	}
	if x.Count(testgit.KindReceivePack) != 1 {
		t.Fatalf("%d pushes over SSH, want 1", x.Count(testgit.KindReceivePack))
	}

	if err := cs.ConfigMaps(ns).Delete(t.Context(), cm.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = w.Apply(t.Context(), change("1.2.0"))
	if !errors.Is(err, gitwb.ErrHostKey) || !strings.Contains(err.Error(), knownhosts.Normalize(x.Addr)) {
		t.Fatalf("without known hosts: %v, want ErrHostKey naming %s", err, knownhosts.Normalize(x.Addr))
	}
	if strings.Contains(err.Error(), strings.Split(key, "\n")[2]) {
		t.Fatal("error shows the private key")
	}
	if x.Count(testgit.KindReceivePack) != 1 {
		t.Fatal("pushed to an untrusted host")
	}
}

// Argo CD's rule for project-scoped repository Secrets (their project
// field, db.getRepositorySecret): the one scoped to the Application's
// project wins, else one scoped to none; one scoped to another project is
// never used, and a repository Secret without credentials takes the
// repo-creds' (enrichCredsToRepo).
func TestArgoRepoCredentialsProjectScoped(t *testing.T) {
	cs := kubecoretest.New(t, env.Config)
	ns := env.CreateNamespace(t, "argocd")
	secret := func(name, typ, url, project, user string) {
		t.Helper()
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{typeLabel: typ}},
			Data: map[string][]byte{"url": []byte(url)}}
		if user != "" {
			s.Data["username"], s.Data["password"] = []byte(user), []byte("pw-"+user)
		}
		if project != "" {
			s.Data["project"] = []byte(project)
		}
		if _, err := cs.Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret("a-only", "repository", "https://git.example.com/shared/deploy.git", "team-a", "team-a-robot")
	secret("b-scoped", "repository", "https://git.example.com/shared/both.git", "team-b", "team-b-robot")
	secret("both", "repository", "https://git.example.com/shared/both.git", "", "everyone")
	secret("bare", "repository", "https://git.example.com/shared/bare.git", "", "")
	secret("org", "repo-creds", "https://git.example.com/shared", "", "org-robot")

	a := &repocreds.ArgoCD{Client: cs, Namespace: ns}
	tests := []struct {
		project, url string
		want         string // username, "" for anonymous
	}{
		{"team-a", "https://git.example.com/shared/deploy.git", "team-a-robot"},
		// Another project's Secret is skipped: the repo-creds serve.
		{"team-b", "https://git.example.com/shared/deploy.git", "org-robot"},
		{"default", "https://git.example.com/shared/deploy.git", "org-robot"},
		{"team-b", "https://git.example.com/shared/both.git", "team-b-robot"},
		{"team-a", "https://git.example.com/shared/both.git", "everyone"},
		{"team-a", "https://git.example.com/shared/bare.git", "org-robot"},
	}
	for _, tt := range tests {
		c, ok, err := a.Credentials(gitwb.WithProject(t.Context(), tt.project), tt.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := map[bool]string{true: c.Username, false: ""}[ok]; got != tt.want {
			t.Errorf("project %s, Credentials(%s) = %q, want %q", tt.project, tt.url, got, tt.want)
		}
	}
}

// trustOne is the operator's word that it names the Secret ns/name.
type trustOne struct{ ns, name string }

func (o trustOne) TrustsSecret(n, name string) bool { return n == o.ns && name == o.name }

// bareToShared is the operator's word that Secret <ns>/bare pushes to the
// platform's shared repository.
type bareToShared struct{ ns string }

func (b bareToShared) SendsTo(n, name, repo string) bool {
	return n == b.ns && name == "bare" && repo == "https://git.example.com/platform/shared"
}

// A Secret an annotation names (write-back-method git:secret:) goes only to
// the repository its own url names (exactly, or as a prefix on the same
// host), or to one the operator's config sends it to (Bound): an
// annotation cannot make crowsnest push with it anywhere else.
func TestArgoNamedSecretBoundToItsRepository(t *testing.T) {
	cs := kubecoretest.New(t, env.Config)
	ns := env.CreateNamespace(t, "team-a")
	for name, url := range map[string]string{"bare": "", "deploy": "https://git.example.com/team-a/deploy.git", "org": "https://git.example.com/team-a"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
			StringData: map[string]string{"username": name, "password": "pw-" + name}}
		if url != "" {
			s.StringData["url"] = url
		}
		if _, err := cs.Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a := &repocreds.ArgoCD{Client: cs, Namespace: "argocd", Bound: bareToShared{ns}}
	tests := []struct {
		secret, url string
		wantErr     bool
	}{
		{"bare", "https://git.example.com/team-a/deploy", true},
		{"bare", "https://git.example.com/platform/shared.git", false},
		{"deploy", "https://git.example.com/team-a/deploy", false},
		{"deploy", "https://git.example.com/team-b/deploy", true},
		{"deploy", "https://evil.example.com/team-a/deploy.git", true},
		{"org", "https://git.example.com/team-a/other.git", false},
		{"org", "https://git.example.com.evil.io/team-a/x", true},
	}
	for _, tt := range tests {
		c, ok, err := a.Credentials(gitwb.WithCredentialsSecret(t.Context(), ns+"/"+tt.secret), tt.url)
		switch {
		case tt.wantErr && !errors.Is(err, repocreds.ErrUnbound):
			t.Errorf("%s for %s: %+v, %v, error %v, want ErrUnbound", tt.secret, tt.url, c, ok, err)
		case !tt.wantErr && (err != nil || !ok || c.Username != tt.secret):
			t.Errorf("%s for %s: %+v, %v, %v", tt.secret, tt.url, c, ok, err)
		}
	}
}
