package tenancy

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/gobwas/glob"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// ErrRefused marks what the tenancy rules refuse: an annotation naming
// credentials or a repository its Application may not use.
var ErrRefused = errors.New("refused by the tenancy rules")

// Rules enforce what an Application, whose annotations anyone who may
// edit it writes, may use of crowsnest's privileges:
//   - credentials its annotations name (pull-secret, write-back-method
//     git:secret:) are Secrets in its own namespace, or entries of the
//     config's tenancy.credentials; credentials the registries config
//     assigns stay with the repositories it assigns them to;
//   - Git write-back goes only to repositories its AppProject permits
//     (spec.sourceRepos, matched as Argo CD matches them) or the config's
//     tenancy.gitRepositories, and only when the AppProject admits the
//     Application's namespace (spec.sourceNamespaces) if it lives outside
//     the project's (Argo CD's) namespace.
//
// The zero value enforces the defaults with no AppProjects known.
type Rules struct {
	// Config returns the operator's widenings; nil (or a nil result) is
	// none.
	Config func() *config.Tenancy
	// Projects, when set, finds the AppProject each Application belongs
	// to; none is known without it.
	Projects Projects
	// ArgoNamespace, when set, is Argo CD's namespace: an unknown default
	// project then admits only its Applications, as the one Argo CD
	// recreates does (it has no sourceNamespaces), so a missing project
	// or a wrong --argocd-namespace fails closed. "" admits every
	// namespace to an unknown default project: local mode only, whose
	// files need not say where Argo CD runs.
	ArgoNamespace string
	// LocalRepos lets Git write-back reach file:// repositories (local
	// mode and the demo, on the operator's own machine); a cluster's
	// Applications never may.
	LocalRepos bool
	// Assignments, when set, says which credentials the registries
	// config assigns to which repositories.
	Assignments Assignments
}

// Projects finds the AppProject an Application belongs to, nil when none
// is known (controller.EngineView: the one Argo CD goes by).
type Projects interface {
	Project(app *watcher.App) *watcher.Project
}

// Assignments says whether the registries config names ref for some
// repository (configured) and whether it names it for repo (here)
// (setup.Registries).
type Assignments interface {
	Assigned(ref config.CredentialRef, repo string) (configured, here bool)
}

func (t *Rules) config() *config.Tenancy {
	if t == nil || t.Config == nil {
		return &config.Tenancy{}
	}
	if c := t.Config(); c != nil {
		return c
	}
	return &config.Tenancy{}
}

// CheckAnnotations drops from spec (read from app's annotations) what the
// rules refuse: an image on a registry tenancy.registries does not list,
// an image whose pull-secret the Application may not use,
// and Git write-back with a git:secret: it may not use. Each refusal is
// an error naming the annotation, the reference and the rule; the rest of
// the Application is kept.
func (t *Rules) CheckAnnotations(app *watcher.App, spec *imageupdate.Spec) []error {
	if spec == nil || spec.Source != imageupdate.SourceAnnotations {
		return nil // crowsnest's own policies are the operator's word
	}
	cfg := t.config()
	var errs []error
	kept := spec.Images[:0]
	for i := range spec.Images {
		img := &spec.Images[i]
		if host := config.RegistryHost(img.Ref.Repo()); !cfg.AllowsRegistry(host) {
			err := fmt.Errorf("%w: registry %s is not in tenancy.registries", ErrRefused, host)
			errs = append(errs, &imageupdate.AnnotationError{Key: imageupdate.Prefix + imageupdate.KeyImageList,
				Msg: fmt.Sprintf("image %s: %v; the image is not updated", img.Alias, err), Err: err})
			continue
		}
		if img.PullSecret == "" {
			kept = append(kept, *img)
			continue
		}
		if err := t.pullSecretAllowed(cfg, app.Namespace, img.PullSecret, img.Ref.Repo()); err != nil {
			key := imageupdate.Prefix + imageupdate.KeyPullSecret
			if k := imageupdate.Prefix + imageupdate.OptionAlias(img.Alias) + "." + imageupdate.KeyPullSecret; app.Annotations[k] != "" {
				key = k
			}
			errs = append(errs, &imageupdate.AnnotationError{Key: key,
				Msg: fmt.Sprintf("%s for image %s: %v; the image is not updated", img.PullSecret, img.Alias, err), Err: err})
			continue
		}
		kept = append(kept, *img)
	}
	spec.Images = kept
	if nsName, ok := strings.CutPrefix(spec.WriteBack.GitCredentials, "secret:"); ok && spec.WriteBack.Method == imageupdate.MethodGit {
		ns, _, _ := strings.Cut(nsName, "/")
		if ns != app.Namespace && !cfg.AllowsGitSecret(nsName, app.Namespace) {
			err := fmt.Errorf("%w: git:secret:%s is in namespace %s, not the Application's (%s), and tenancy.credentials has no gitSecret entry for it",
				ErrRefused, nsName, ns, app.Namespace)
			errs = append(errs, &imageupdate.AnnotationError{Key: imageupdate.Prefix + imageupdate.KeyWriteBack, Msg: err.Error() + "; nothing is written", Err: err})
			spec.WriteBack.Method = ""
		}
	}
	return errs
}

// pullSecretAllowed applies the credential rules to one pull-secret
// reference for one repository.
func (t *Rules) pullSecretAllowed(cfg *config.Tenancy, namespace, raw, repo string) error {
	ref, err := config.ParseCredentialRef(raw)
	if err != nil {
		return err // FromAnnotations refused it already
	}
	host := config.RegistryHost(repo)
	if cfg.AllowsPullSecret(ref, namespace, host) {
		return nil
	}
	if t != nil && t.Assignments != nil {
		if configured, here := t.Assignments.Assigned(ref, repo); here {
			return nil
		} else if configured {
			return fmt.Errorf("%w: the registries config assigns these credentials to other repositories than %s", ErrRefused, repo)
		}
	}
	switch ref.Source {
	case config.CredsPullSecret, config.CredsSecret:
		if ref.Namespace == namespace {
			return nil
		}
		return fmt.Errorf("%w: Secret %s/%s is not in the Application's namespace (%s), and tenancy.credentials does not allow it for %s",
			ErrRefused, ref.Namespace, ref.Name, namespace, host)
	default:
		return fmt.Errorf("%w: %s: credentials from annotations are off unless tenancy.credentials allows them for %s", ErrRefused, ref.Source, host)
	}
}

// CheckRepository reports whether app may use repoURL: Git write-back
// pushes to it, the notification repo helpers read it, a GitHub
// notification acts on it. The error names the rule that refuses it.
func (t *Rules) CheckRepository(app *watcher.App, repoURL string) error {
	if err := plainRepoURL(repoURL, t != nil && t.LocalRepos); err != nil {
		return fmt.Errorf("%w: repository %s: %w", ErrRefused, repoURL, err)
	}
	cfg := t.config()
	if len(cfg.GitRepositories) > 0 && sourcePermitted(cfg.GitRepositories, repoURL) {
		return nil
	}
	name, proj := t.project(app)
	var repos []string
	if proj != nil {
		repos = stringList(proj.Object, "spec", "sourceRepos")
	} else {
		// Argo CD creates the default project, permitting every
		// repository to Applications in its own namespace, whenever it
		// is missing.
		repos = []string{"*"}
	}
	if err := t.admits(app, proj); err != nil {
		return fmt.Errorf("%w: repository %s: %w", ErrRefused, repoURL, err)
	}
	if !sourcePermitted(repos, repoURL) {
		return fmt.Errorf("%w: repository %s: not permitted by AppProject %s spec.sourceRepos nor tenancy.gitRepositories",
			ErrRefused, repoURL, name)
	}
	return nil
}

// GitSecretBound reports whether the operator's config sends the Git
// Secret nsName ("namespace/name") to repoURL: a tenancy.credentials
// gitSecret entry whose repositories permit it (Argo CD's sourceRepos
// syntax). Otherwise the Secret's own url decides (repocreds.ArgoCD).
func (t *Rules) GitSecretBound(nsName, repoURL string) bool {
	patterns := t.config().GitSecretRepositories(nsName)
	return len(patterns) > 0 && sourcePermitted(patterns, repoURL)
}

// AdmitsPolicy reports whether an image policy may serve app: a policy
// matches on fields the Application's author writes (name, labels,
// spec.project), so an Application in a namespace its AppProject does not
// admit (spec.sourceNamespaces) is not one of the project's, whatever it
// names.
func (t *Rules) AdmitsPolicy(app *watcher.App) error {
	if t == nil || t.Projects == nil {
		return nil
	}
	if err := t.admits(app, t.Projects.Project(app)); err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return nil
}

// admits applies Argo CD's rule for which Applications an AppProject
// takes (proj, nil when none of the name is known): one in the project's
// own namespace (Argo CD's), or one spec.sourceNamespaces admits. An
// unknown project admits nothing, except the default project Argo CD
// recreates whenever it is missing, which admits its own namespace only
// (every namespace in local mode, where ArgoNamespace is "").
func (t *Rules) admits(app *watcher.App, proj *watcher.Project) error {
	name := cmp.Or(app.Project, "default")
	switch {
	case proj == nil && name == "default" && (t == nil || t.ArgoNamespace == "" || app.Namespace == t.ArgoNamespace):
		return nil
	case proj == nil && name == "default":
		return fmt.Errorf("AppProject default is not in Argo CD's namespace %s; the one Argo CD recreates admits no Applications in namespace %s",
			t.ArgoNamespace, app.Namespace)
	case proj == nil:
		return fmt.Errorf("AppProject %s is not known", name)
	case app.Namespace != proj.Namespace && !namespacePermitted(stringList(proj.Object, "spec", "sourceNamespaces"), app.Namespace):
		return fmt.Errorf("AppProject %s does not admit Applications in namespace %s (spec.sourceNamespaces)", name, app.Namespace)
	}
	return nil
}

// project is the name of app's AppProject ("default" when it names
// none) and the project, nil when it is not known.
func (t *Rules) project(app *watcher.App) (string, *watcher.Project) {
	name := app.Project
	if name == "" {
		name = "default"
	}
	if t == nil || t.Projects == nil {
		return name, nil
	}
	return name, t.Projects.Project(app)
}

// WritePaths are the path globs tenancy.writePaths lets app's Git
// write-back change beyond the files app renders from. An entry that
// selects by project counts only when app's AppProject is known to admit
// app's namespace (or is the default project Argo CD keeps for its own
// namespace): spec.project is the Application author's to write.
func (t *Rules) WritePaths(app *watcher.App) []string {
	cfg := t.config()
	if len(cfg.WritePaths) == 0 {
		return nil
	}
	name, proj := t.project(app)
	if t.admits(app, proj) != nil {
		name = ""
	}
	return cfg.WritePathsFor(name, app.Namespace)
}

// sourcePermitted matches repoURL against sourceRepos patterns as Argo
// CD's AppProject.IsSourcePermitted does: both normalized, globs with '/'
// as separator, "*" alone matching all, and a "!" pattern the URL matches
// refusing it whatever else matches.
func sourcePermitted(patterns []string, repoURL string) bool {
	src := normalizeArgoGitURL(repoURL)
	matchedAny := false
	for _, p := range patterns {
		deny := strings.HasPrefix(p, "!")
		n := normalizeArgoGitURL(strings.TrimPrefix(p, "!"))
		var matched bool
		switch {
		case deny:
			matched = !globMatch(n, src, '/')
		case n == "*":
			matched = true
		default:
			matched = globMatch(n, src, '/')
		}
		if matched {
			matchedAny = true
		} else if deny {
			return false
		}
	}
	return matchedAny
}

// namespacePermitted matches a namespace against sourceNamespaces as Argo
// CD does: "/regexp/" entries or globs.
func namespacePermitted(patterns []string, ns string) bool {
	for _, p := range patterns {
		if len(p) > 2 && strings.HasPrefix(p, "/") && strings.HasSuffix(p, "/") {
			if re, err := regexp.Compile(p[1 : len(p)-1]); err == nil && re.MatchString(ns) {
				return true
			}
			continue
		}
		if globMatch(p, ns) {
			return true
		}
	}
	return false
}

// globMatch is Argo CD's glob.Match (util/glob): gobwas/glob, and a
// pattern that does not compile matches nothing.
func globMatch(pattern, s string, separators ...rune) bool {
	g, err := glob.Compile(pattern, separators...)
	return err == nil && g.Match(s)
}

// sshURLRE is Argo CD's test for an SSH repository URL.
var sshURLRE = regexp.MustCompile(`^(ssh://)?([^/:]*?)@[^@]+$`)

// normalizeArgoGitURL is Argo CD's git.NormalizeGitURL: lower case, an
// scp-like address as ssh://, no .git suffix, no ssh:// prefix; "" when
// it does not parse.
func normalizeArgoGitURL(repo string) string {
	repo = strings.ToLower(strings.TrimSpace(repo))
	if sshURLRE.MatchString(repo) && !strings.HasPrefix(repo, "ssh://") {
		repo = "ssh://" + strings.Replace(repo, ":", "/", 1)
	}
	repo = strings.TrimSuffix(repo, ".git")
	u, err := url.Parse(repo)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.String(), "ssh://")
}

// stringList reads a list of strings from obj; other items are skipped.
func stringList(obj *unstructured.Unstructured, fields ...string) []string {
	if obj == nil {
		return nil
	}
	raw, _, _ := unstructured.NestedSlice(obj.Object, fields...)
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// plainRepoURL refuses repository URLs whose meaning a pattern match
// cannot pin down, before sourceRepos are matched: Git clients decode
// %2F and %2E and resolve "." and ".." segments, so
// https://host/team-b/..%2Fteam-a matches "https://host/team-b/*" and
// reaches team-a's repository. Only http(s), ssh and scp-like addresses
// are Git write-back's; file:// and local paths never are.
func plainRepoURL(repoURL string, local bool) error {
	if strings.ContainsAny(repoURL, "?#\\ \t\r\n") {
		return errors.New("a repository URL has no query, fragment, backslash or blank")
	}
	for _, r := range repoURL {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) {
			return errors.New("a repository URL is printable ASCII")
		}
	}
	lower := strings.ToLower(repoURL)
	for _, enc := range []string{"%2f", "%2e", "%5c", "%00"} {
		if strings.Contains(lower, enc) {
			return fmt.Errorf("encoded %q in a repository URL", enc)
		}
	}
	var path string
	switch {
	case strings.HasPrefix(lower, "https://"), strings.HasPrefix(lower, "http://"), strings.HasPrefix(lower, "ssh://"),
		strings.HasPrefix(lower, "git+ssh://"), strings.HasPrefix(lower, "ssh+git://"):
		_, rest, _ := strings.Cut(repoURL, "://")
		_, path, _ = strings.Cut(rest, "/")
	case !strings.Contains(repoURL, "://") && gitwb.SCPLikeURL.MatchString(repoURL):
		_, path, _ = strings.Cut(repoURL, ":")
	case local && strings.HasPrefix(lower, "file://"):
		path = repoURL[len("file://"):]
	default:
		return errors.New("write-back goes to http(s), ssh or scp-like (git@host:org/repo) repositories only")
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." {
			return errors.New(`"." and ".." path segments are not allowed in a repository URL`)
		}
	}
	return nil
}
