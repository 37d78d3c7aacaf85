package config

import (
	"path"
	"slices"
	"strings"

	"github.com/gobwas/glob"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
)

// Tenancy is what the authors of Application annotations, who may be
// other teams than crowsnest's operator, may use of crowsnest's
// privileges beyond the defaults. By default an annotation may name as
// registry credentials (pull-secret) and Git credentials
// (write-back-method git:secret:) only Secrets in the Application's own
// namespace, never env:, ext: or dockerconfig: sources, and Git
// write-back may reach only repositories the Application's AppProject
// permits (spec.sourceRepos, Argo CD's own tenant boundary) and change
// there only files the Application renders from.
type Tenancy struct {
	// Credentials are the references annotations may name beyond the
	// defaults, each with the registries it may be sent to and the
	// namespaces whose Applications may name it.
	Credentials []TenancyCredential `yaml:"credentials"`
	// GitRepositories are repository URL patterns (Argo CD's sourceRepos
	// syntax: globs, "!" denies) Git write-back may push to whatever the
	// AppProject says, e.g. a shared deployment repository.
	GitRepositories []string `yaml:"gitRepositories"`
	// Registries, when set, are the registry hosts (globs such as
	// "*.example.com") an annotation's image-list may name; other images
	// are refused before any request. Empty is every registry, as in
	// argocd-image-updater.
	Registries []string `yaml:"registries"`
	// WritePaths let the Applications they select have Git write-back
	// change files beyond those they render from (by default only their
	// source paths' kustomizations and what those include, their Helm
	// value files and .argocd-source files), e.g. a shared folder of a
	// monorepo.
	WritePaths []TenancyWritePath `yaml:"writePaths"`
}

// TenancyWritePath lets the Applications of some projects and namespaces
// write more files of the repositories they may write.
type TenancyWritePath struct {
	// Projects are AppProject names (globs) whose Applications it
	// selects; empty is every project.
	Projects []string `yaml:"projects"`
	// Namespaces are Application namespaces (globs) it selects; empty is
	// every namespace. An Application must match both lists.
	Namespaces []string `yaml:"namespaces"`
	// Paths are the files it allows, globs relative to the repository
	// root ("/shared/**": '*' does not cross '/', '**' does), in every
	// repository the Application may write.
	Paths []string `yaml:"paths"`
}

// TenancyCredential lets annotations name one credentials reference.
type TenancyCredential struct {
	// PullSecret is the reference as the pull-secret annotation writes
	// it: pullsecret:<ns>/<name>, secret:<ns>/<name>#<field>, env:<VAR>,
	// ext:<path> or dockerconfig:<path>. Set it or GitSecret.
	PullSecret CredentialRef `yaml:"pullSecret"`
	// GitSecret is <namespace>/<name> as write-back-method
	// git:secret:<namespace>/<name> names it.
	GitSecret string `yaml:"gitSecret"`
	// Registries are the registry hosts (globs such as "*.example.com")
	// the credentials may be sent to. Required except for pullsecret:,
	// whose Secret names its registries itself.
	Registries []string `yaml:"registries"`
	// Namespaces (globs) of the Applications that may name it; empty is
	// every namespace.
	Namespaces []string `yaml:"namespaces"`
	// Repositories are the Git repositories (Argo CD's sourceRepos
	// syntax) a gitSecret may push to. Empty leaves it to the Secret's
	// own url, as Argo CD's repository Secrets have: a Secret without one
	// goes nowhere, so an annotation cannot send it to another host.
	Repositories []string `yaml:"repositories"`
}

func (t *Tenancy) validate(p string, errs *fieldErrors) {
	for i := range t.Credentials {
		c := &t.Credentials[i]
		cp := fieldpath.Index(fieldpath.Join(p, "credentials"), i)
		switch {
		case c.PullSecret.IsZero() && c.GitSecret == "":
			errs.invalid(cp, "set pullSecret or gitSecret")
		case !c.PullSecret.IsZero() && c.GitSecret != "":
			errs.invalid(cp, "set pullSecret or gitSecret, not both")
		}
		if c.GitSecret != "" {
			ns, name, ok := strings.Cut(c.GitSecret, "/")
			if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
				errs.invalid(fieldpath.Join(cp, "gitSecret"), "want <namespace>/<name> as in write-back-method git:secret:<namespace>/<name>, got %q", c.GitSecret)
			}
			if len(c.Registries) > 0 {
				errs.invalid(fieldpath.Join(cp, "registries"), "applies to pullSecret only; a Git secret goes to its repositories (repositories, or the Secret's url)")
			}
		} else if len(c.Repositories) > 0 {
			errs.invalid(fieldpath.Join(cp, "repositories"), "applies to gitSecret only; a pullSecret goes to its registries")
		}
		for j, r := range c.Repositories {
			if strings.TrimSpace(strings.TrimPrefix(r, "!")) == "" || strings.ContainsAny(r, " \t\n") {
				errs.invalid(fieldpath.Index(fieldpath.Join(cp, "repositories"), j), "want a repository URL or glob, got %q", r)
			}
		}
		if s := c.PullSecret.Source; s != "" && s != CredsPullSecret && len(c.Registries) == 0 {
			errs.invalid(fieldpath.Join(cp, "registries"), "required for %s: credentials: name the registry hosts they may be sent to", s)
		}
		for j, r := range c.Registries {
			if _, err := path.Match(r, ""); err != nil || r == "" || strings.ContainsAny(r, "/ ") {
				errs.invalid(fieldpath.Index(fieldpath.Join(cp, "registries"), j), "want a registry host or host glob (ghcr.io, *.example.com), got %q", r)
			}
		}
		for j, ns := range c.Namespaces {
			if _, err := path.Match(ns, ""); err != nil || ns == "" {
				errs.invalid(fieldpath.Index(fieldpath.Join(cp, "namespaces"), j), "want a namespace or namespace glob, got %q", ns)
			}
		}
	}
	for i, r := range t.Registries {
		if _, err := path.Match(r, ""); err != nil || r == "" || strings.ContainsAny(r, "/ ") {
			errs.invalid(fieldpath.Index(fieldpath.Join(p, "registries"), i), "want a registry host or host glob (ghcr.io, *.example.com), got %q", r)
		}
	}
	for i := range t.WritePaths {
		t.WritePaths[i].validate(fieldpath.Index(fieldpath.Join(p, "writePaths"), i), errs)
	}
	allows := false
	for i, r := range t.GitRepositories {
		if strings.TrimSpace(strings.TrimPrefix(r, "!")) == "" || strings.ContainsAny(r, " \t\n") {
			errs.invalid(fieldpath.Index(fieldpath.Join(p, "gitRepositories"), i), "want a repository URL or glob, got %q", r)
		}
		allows = allows || !strings.HasPrefix(r, "!")
	}
	if len(t.GitRepositories) > 0 && !allows {
		// As in sourceRepos, a deny pattern alone permits every other
		// repository; here that would widen every AppProject to all.
		errs.invalid(fieldpath.Join(p, "gitRepositories"), "only \"!\" patterns: they would permit every other repository; list the repositories to permit")
	}
}

func (w *TenancyWritePath) validate(p string, errs *fieldErrors) {
	if len(w.Paths) == 0 {
		errs.invalid(fieldpath.Join(p, "paths"), "required: the files (globs relative to the repository root, e.g. /shared/**) the selected Applications may write")
	}
	for i, g := range w.Paths {
		rel := strings.TrimPrefix(g, "/")
		segs := strings.Split(rel, "/")
		_, err := glob.Compile(rel, '/')
		switch {
		case rel == "" || err != nil:
			errs.invalid(fieldpath.Index(fieldpath.Join(p, "paths"), i), "want a path glob relative to the repository root (/shared/**), got %q", g)
		case slices.Contains(segs, "..") || slices.Contains(segs, "."):
			errs.invalid(fieldpath.Index(fieldpath.Join(p, "paths"), i), "%q: \".\" and \"..\" segments are not allowed: paths are relative to the repository root", g)
		}
	}
	for _, f := range []struct {
		name string
		list []string
	}{{"projects", w.Projects}, {"namespaces", w.Namespaces}} {
		for i, g := range f.list {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				errs.invalid(fieldpath.Index(fieldpath.Join(p, f.name), i), "want a name or name glob, got %q", g)
			}
		}
	}
}

// WritePathsFor are the path globs tenancy.writePaths lets an
// Application of project in namespace write beyond what it renders from.
// project is "" when the caller cannot vouch that the AppProject the
// Application names admits it: entries that name projects then do not
// select it (its author writes spec.project).
func (t *Tenancy) WritePathsFor(project, namespace string) []string {
	var out []string
	for i := range t.WritePaths {
		w := &t.WritePaths[i]
		byProject := len(w.Projects) == 0 || project != "" && globAny(w.Projects, project, false)
		if byProject && globAny(w.Namespaces, namespace, true) {
			out = append(out, w.Paths...)
		}
	}
	return out
}

// AllowsPullSecret reports whether an Application in namespace may use
// ref, named by its pull-secret annotation, against registryHost: by the
// entries of Credentials only (the own-namespace default is the caller's).
func (t *Tenancy) AllowsPullSecret(ref CredentialRef, namespace, registryHost string) bool {
	host := RegistryHost(registryHost)
	for i := range t.Credentials {
		c := &t.Credentials[i]
		if c.PullSecret.IsZero() || c.PullSecret != ref || !globAny(c.Namespaces, namespace, true) {
			continue
		}
		if len(c.Registries) == 0 && ref.Source == CredsPullSecret || globAny(c.Registries, host, false) {
			return true
		}
	}
	return false
}

// ListsRegistry reports whether an entry of Credentials names ref for
// registryHost in its registries, whatever namespaces it admits: the
// operator has said where these credentials go.
func (t *Tenancy) ListsRegistry(ref CredentialRef, registryHost string) bool {
	host := RegistryHost(registryHost)
	for i := range t.Credentials {
		c := &t.Credentials[i]
		if !c.PullSecret.IsZero() && c.PullSecret == ref && globAny(c.Registries, host, false) {
			return true
		}
	}
	return false
}

// GitSecretRepositories returns the repositories patterns the entries
// naming the Secret nsName list (nil when none lists any).
func (t *Tenancy) GitSecretRepositories(nsName string) []string {
	var out []string
	for i := range t.Credentials {
		if c := &t.Credentials[i]; c.GitSecret == nsName {
			out = append(out, c.Repositories...)
		}
	}
	return out
}

// AllowsRegistry reports whether an annotation's image may live on
// registryHost: Registries is empty or names it.
func (t *Tenancy) AllowsRegistry(registryHost string) bool {
	return globAny(t.Registries, RegistryHost(registryHost), true)
}

// AllowsGitSecret reports whether an Application in namespace may name
// the Secret nsName ("namespace/name") in write-back-method git:secret:,
// by the entries of Credentials.
func (t *Tenancy) AllowsGitSecret(nsName, namespace string) bool {
	for i := range t.Credentials {
		c := &t.Credentials[i]
		if c.GitSecret == nsName && globAny(c.Namespaces, namespace, true) {
			return true
		}
	}
	return false
}

// globAny reports whether s matches one of the patterns; an empty list
// is emptyMatches.
func globAny(patterns []string, s string, emptyMatches bool) bool {
	if len(patterns) == 0 {
		return emptyMatches
	}
	for _, p := range patterns {
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(s)); ok {
			return true
		}
	}
	return false
}
