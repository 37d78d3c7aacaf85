package repocreds

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/crowsnest-dev/crowsnest/internal/githubapp"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/registry/creds"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// Argo CD's labels for repository credentials, and where it keeps the
// SSH host keys it trusts.
const (
	argoSecretTypeLabel = "argocd.argoproj.io/secret-type"
	argoRepository      = "repository"
	argoRepoCreds       = "repo-creds"
	// KnownHostsConfigMap and KnownHostsKey hold Argo CD's SSH
	// known_hosts, in its namespace.
	KnownHostsConfigMap = "argocd-ssh-known-hosts-cm"
	KnownHostsKey       = "ssh_known_hosts"
)

// ArgoCD finds Git credentials the way Argo CD does: a
// `repository` Secret whose url equals the repository's (one whose
// project field names the changes' AppProject, gitwb.WithProject, else
// one with no project; one scoped to another project never), else the
// `repo-creds` Secret with the longest url prefix, in Namespace (Argo CD's).
// A change's own Secret (write-back-method git:secret:<ns>/<name>, carried
// as gitwb.Change.CredentialsSecret and handed over through the context)
// wins for its batch only; one Argo CD or Kubernetes keeps for itself is
// refused unless Trust says the operator named it. Secrets give username and password
// (HTTPS) or sshPrivateKey (SSH); for SSH the host keys trusted are Argo
// CD's argocd-ssh-known-hosts-cm plus KnownHostsFile.
type ArgoCD struct {
	Client    kubecore.Interface
	Namespace string
	// KnownHostsFile is a known_hosts file (--git-ssh-known-hosts) whose
	// hosts are trusted besides those in Argo CD's ConfigMap. It is read
	// at each use, so an edit needs no restart.
	KnownHostsFile string
	// Trust, when set, says which Secrets the operator's config names
	// for Git, which lets a reserved one through.
	Trust Trust
	// Bound says whether the operator's config sends the Secret
	// namespace/name to repoURL (an image policy's git:secret:, a
	// tenancy.credentials entry's repositories). Otherwise a named
	// Secret goes only to the repository its own url names (exactly, or
	// as a prefix on the same host, as repo-creds match): an annotation
	// cannot send it to another host.
	Bound Binding

	mu   sync.Mutex
	apps map[string]*githubapp.Source // GitHub App installation tokens
}

// Trust reports whether the operator's config names the Secret
// namespace/name for Git (crowsnest run: tenancy.credentials gitSecret,
// an image policy's git:secret:).
type Trust interface {
	TrustsSecret(namespace, name string) bool
}

// Binding says where the operator sends Git Secrets annotations name
// (crowsnest run: an image policy's git:secret:, tenancy.credentials
// repositories).
type Binding interface {
	// SendsTo reports whether the Secret namespace/name may push to
	// repoURL whatever its own url says.
	SendsTo(namespace, name, repoURL string) bool
}

// ErrUnbound says a Secret named for a write-back is not for that
// repository.
var ErrUnbound = errors.New("the Secret is not for this repository")

var _ gitwb.CredentialsSource = (*ArgoCD)(nil)

// Credentials implements gitwb.CredentialsSource.
func (a *ArgoCD) Credentials(ctx context.Context, repoURL string) (gitwb.Credentials, bool, error) {
	want := gitwb.RepoKey(repoURL)
	c, ok, err := a.find(ctx, want)
	if err == nil && ok && c.app != nil {
		return a.appCredentials(ctx, c.app)
	}
	if err != nil || !ok || c.SSHPrivateKey == "" || !strings.HasPrefix(want, "ssh://") {
		return c.Credentials, ok, err
	}
	c.SSHKnownHosts, err = a.knownHosts(ctx)
	return c.Credentials, ok, err
}

func (a *ArgoCD) find(ctx context.Context, want string) (found, bool, error) {
	if named := gitwb.CredentialsSecret(ctx); named != "" {
		ns, name, _ := strings.Cut(named, "/")
		s, err := a.Client.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return found{}, false, fmt.Errorf("reading git credentials secret %s: %w", named, err)
		}
		if a.Trust == nil || !a.Trust.TrustsSecret(ns, name) {
			if err := creds.CheckReserved(s); err != nil {
				return found{}, false, fmt.Errorf("git credentials secret %s: %w", named, err)
			}
		}
		if a.Bound == nil || !a.Bound.SendsTo(ns, name, want) {
			if err := boundTo(s, want); err != nil {
				return found{}, false, fmt.Errorf("git credentials secret %s: %w", named, err)
			}
		}
		return credentialsOf(s), true, nil
	}
	list, err := a.Client.Secrets(a.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: argoSecretTypeLabel + " in (" + argoRepository + "," + argoRepoCreds + ")",
	})
	if err != nil {
		return found{}, false, fmt.Errorf("listing Argo CD repository secrets in %s: %w", a.Namespace, err)
	}
	project := gitwb.Project(ctx)
	var repo, unscoped *corev1.Secret
	var best found
	bestLen := -1
	for i := range list.Items {
		s := &list.Items[i]
		u := gitwb.RepoKey(string(s.Data["url"]))
		if u == "" {
			continue
		}
		switch s.Labels[argoSecretTypeLabel] {
		case argoRepository:
			// Argo CD's rule (db.getRepositorySecret): the Secret scoped
			// to the Application's project wins, else one scoped to no
			// project; one scoped to another project is never used.
			switch scope := string(s.Data["project"]); {
			case u != want:
			case scope != "" && scope == project && repo == nil:
				repo = s
			case scope == "":
				unscoped = s
			}
		case argoRepoCreds:
			// A plain prefix, as Argo CD matches, but on the same
			// host: repo-creds for https://git.example.com/ never go
			// to https://git.example.com.evil.io/x.
			if strings.HasPrefix(want, u) && hostOf(want) == hostOf(u) && len(u) > bestLen {
				best, bestLen = credentialsOf(s), len(u)
			}
		}
	}
	repo = cmp.Or(repo, unscoped)
	if repo != nil {
		if c := credentialsOf(repo); c != (found{}) {
			return c, true, nil
		}
		// A repository Secret without credentials takes the repo-creds',
		// as Argo CD's enrichCredsToRepo does.
	}
	return best, bestLen >= 0, nil
}

// boundTo checks that the Secret s is for the repository want (normalized):
// its url is want, or a prefix of it on the same host.
func boundTo(s *corev1.Secret, want string) error {
	return CheckURL(string(s.Data["url"]), want)
}

// CheckURL checks that a named Secret whose url field is secretURL is for
// the repository repoURL: secretURL names it, or is a prefix of it on the
// same host (ErrUnbound otherwise, saying what to do). `crowsnest
// migrate` asks it of the Secrets annotations name.
func CheckURL(secretURL, repoURL string) error {
	want := gitwb.RepoKey(repoURL)
	raw := strings.TrimSpace(secretURL)
	if raw == "" {
		return fmt.Errorf("%w: it has no url; give it the repository's url (as Argo CD repository Secrets have) "+
			"or list the repository under its tenancy.credentials entry's repositories", ErrUnbound)
	}
	u := gitwb.RepoKey(raw)
	if u == "" || !strings.HasPrefix(want, u) || hostOf(want) != hostOf(u) {
		return fmt.Errorf("%w: its url does not name %s", ErrUnbound, want)
	}
	return nil
}

// found is what a Secret gives: credentials, or a GitHub App whose
// installation token they are made of.
type found struct {
	gitwb.Credentials
	app *githubApp
}

// githubApp is a GitHub App installation of an Argo CD repository Secret
// (githubAppID, githubAppInstallationID, githubAppPrivateKey and, for
// GitHub Enterprise Server, githubAppEnterpriseBaseUrl).
type githubApp struct {
	forge.GitHubApp
	// err says what is wrong with the Secret's fields.
	err error
}

// credentialsOf reads the fields Argo CD's repository Secrets use.
func credentialsOf(s *corev1.Secret) found {
	f := found{Credentials: gitwb.Credentials{
		Username:      string(s.Data["username"]),
		Password:      string(s.Data["password"]),
		SSHPrivateKey: string(s.Data["sshPrivateKey"]),
	}}
	if len(s.Data["githubAppID"]) > 0 || len(s.Data["githubAppPrivateKey"]) > 0 {
		f.app = githubAppOf(s)
	}
	return f
}

// githubAppOf reads a Secret's GitHub App fields as Argo CD does.
func githubAppOf(s *corev1.Secret) *githubApp {
	app := &githubApp{GitHubApp: forge.GitHubApp{PrivateKey: string(s.Data["githubAppPrivateKey"])}}
	var errs []error
	for _, f := range []struct {
		key string
		out *int64
	}{{"githubAppID", &app.AppID}, {"githubAppInstallationID", &app.InstallationID}} {
		n, err := strconv.ParseInt(strings.TrimSpace(string(s.Data[f.key])), 10, 64)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s: want a positive integer", f.key))
		}
		*f.out = n
	}
	if base := strings.TrimSpace(string(s.Data["githubAppEnterpriseBaseUrl"])); base != "" {
		// Argo CD's field is the API root (https://HOST/api/v3).
		app.API = strings.TrimSuffix(base, "/")
	}
	app.err = errors.Join(errs...)
	return app
}

// appCredentials are the credentials of a GitHub App installation: its
// installation token, kept per app, installation, API and key while it is
// good.
func (a *ArgoCD) appCredentials(ctx context.Context, app *githubApp) (gitwb.Credentials, bool, error) {
	if app.err != nil {
		return gitwb.Credentials{}, false, fmt.Errorf("GitHub App repository credentials: %w", app.err)
	}
	sum := sha256.Sum256([]byte(app.PrivateKey))
	key := fmt.Sprintf("%d/%d/%s/%x", app.AppID, app.InstallationID, app.API, sum[:8])
	a.mu.Lock()
	src := a.apps[key]
	if src == nil {
		var err error
		if src, err = forge.GitHubAppTokens(app.GitHubApp, forge.Options{}); err != nil {
			a.mu.Unlock()
			return gitwb.Credentials{}, false, err
		}
		if a.apps == nil {
			a.apps = map[string]*githubapp.Source{}
		}
		a.apps[key] = src
	}
	a.mu.Unlock()
	tok, err := src.Token(ctx)
	if err != nil {
		return gitwb.Credentials{}, false, fmt.Errorf("GitHub App installation token: %w", err)
	}
	return gitwb.Credentials{Username: "x-access-token", Password: tok}, true, nil
}

// knownHosts joins Argo CD's known hosts ConfigMap (none is no hosts) and
// KnownHostsFile, each checked so a bad line is reported where it is.
func (a *ArgoCD) knownHosts(ctx context.Context) (string, error) {
	var parts []string
	cm, err := a.Client.ConfigMaps(a.Namespace).Get(ctx, KnownHostsConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", fmt.Errorf("reading SSH known hosts ConfigMap %s/%s: %w", a.Namespace, KnownHostsConfigMap, err)
	default:
		text := cm.Data[KnownHostsKey]
		if err := gitwb.CheckKnownHosts("ConfigMap "+a.Namespace+"/"+KnownHostsConfigMap+" "+KnownHostsKey, text); err != nil {
			return "", err
		}
		parts = append(parts, text)
	}
	if a.KnownHostsFile != "" {
		text, err := gitwb.ReadKnownHostsFile(a.KnownHostsFile)
		if err != nil {
			return "", err
		}
		parts = append(parts, text)
	}
	return strings.Join(parts, "\n"), nil
}

// hostOf is the user@host:port part of a normalized repository URL.
func hostOf(u string) string {
	_, rest, _ := strings.Cut(u, "://")
	host, _, _ := strings.Cut(rest, "/")
	return host
}
