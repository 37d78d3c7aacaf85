package tenancy

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// sourceRepos patterns as Argo CD's AppProject.IsSourcePermitted reads
// them (pkg/apis/application/v1alpha1/app_project_types.go, v3.6.1).
func TestSourcePermittedAsArgoCD(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		repo     string
		want     bool
	}{
		{"star permits all", []string{"*"}, "https://evil.example.com/x.git", true},
		{"none permits nothing", nil, "https://git.example.com/a/b", false},
		{"exact", []string{"https://git.example.com/a/b"}, "https://git.example.com/a/b", true},
		{".git and case ignored", []string{"https://git.example.com/A/b.git"}, "https://GIT.example.com/a/b", true},
		{"glob within a segment", []string{"https://git.example.com/a/*"}, "https://git.example.com/a/b", true},
		{"star does not cross slashes", []string{"https://git.example.com/*"}, "https://git.example.com/a/b", false},
		{"double star crosses slashes", []string{"https://git.example.com/**"}, "https://git.example.com/a/b", true},
		{"other host", []string{"https://git.example.com/**"}, "https://evil.example.com/a/b", false},
		{"host glob does not take a path", []string{"https://*.example.com/a/b"}, "https://evil.com/x.example.com/a/b", false},
		{"userinfo is part of the URL", []string{"https://git.example.com/a/b"}, "https://user:tok@git.example.com/a/b", false},
		{"scp-like matches its ssh form", []string{"git@git.example.com:a/b.git"}, "ssh://git@git.example.com/a/b", true},
		{"deny wins", []string{"*", "!https://git.example.com/secret/*"}, "https://git.example.com/secret/x", false},
		{"deny of another repo", []string{"!https://git.example.com/secret/*"}, "https://git.example.com/open/x", true},
		{"deny before allow", []string{"!https://git.example.com/secret/*", "https://git.example.com/**"}, "https://git.example.com/secret/x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sourcePermitted(tt.patterns, tt.repo); got != tt.want {
				t.Errorf("sourcePermitted(%q, %q) = %v, want %v", tt.patterns, tt.repo, got, tt.want)
			}
		})
	}
}

func TestNamespacePermittedAsArgoCD(t *testing.T) {
	tests := []struct {
		patterns []string
		ns       string
		want     bool
	}{
		{[]string{"team-a"}, "team-a", true},
		{[]string{"team-*"}, "team-b", true},
		{[]string{"team-*"}, "other", false},
		{[]string{"/^team-[ab]$/"}, "team-b", true},
		{[]string{"/^team-[ab]$/"}, "team-c", false},
		{nil, "team-a", false},
	}
	for _, tt := range tests {
		if got := namespacePermitted(tt.patterns, tt.ns); got != tt.want {
			t.Errorf("namespacePermitted(%q, %q) = %v, want %v", tt.patterns, tt.ns, got, tt.want)
		}
	}
}

// project is an AppProject in Argo CD's namespace, "argocd".
func project(name string, repos, namespaces []any) *watcher.Project {
	return watcher.ProjectFromObject(&unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"namespace": "argocd", "name": name},
		"spec":     map[string]any{"sourceRepos": repos, "sourceNamespaces": namespaces},
	}})
}

func TestCheckRepository(t *testing.T) {
	projects := map[string]*watcher.Project{
		"team-a": project("team-a", []any{"https://git.example.com/team-a/*"}, []any{"team-a"}),
		"open":   project("open", []any{"*"}, nil),
	}
	ten := &Rules{
		Config: func() *config.Tenancy {
			return &config.Tenancy{GitRepositories: []string{"https://git.example.com/shared/*"}}
		},
		Projects:      projectsByName(projects),
		ArgoNamespace: "argocd",
	}
	tests := []struct {
		name, ns, project, repo string
		wantRule                string // "" when permitted
	}{
		{"permitted by sourceRepos", "team-a", "team-a", "https://git.example.com/team-a/deploy", ""},
		{"not in sourceRepos", "team-a", "team-a", "http://169.254.169.254/latest", "spec.sourceRepos"},
		{"operator allow-list", "team-a", "team-a", "https://git.example.com/shared/deploy", ""},
		{"namespace not admitted", "team-b", "team-a", "https://git.example.com/team-a/deploy", "spec.sourceNamespaces"},
		{"project's own namespace is admitted", "argocd", "open", "https://anything.example.com/x", ""},
		{"other namespace, no sourceNamespaces", "team-b", "open", "https://anything.example.com/x", "spec.sourceNamespaces"},
		{"unknown project", "team-a", "nope", "https://git.example.com/team-a/deploy", "AppProject nope is not known"},
		{"missing default project is Argo CD's", "argocd", "", "https://anything.example.com/x", ""},
		// Fail closed: a missing default project (or a wrong
		// --argocd-namespace) admits no other namespace.
		{"missing default project admits no other namespace", "team-a", "", "https://anything.example.com/x", "AppProject default is not in Argo CD's namespace"},
		{"missing default project, named", "team-a", "default", "https://anything.example.com/x", "AppProject default is not in Argo CD's namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ten.CheckRepository(&watcher.App{Namespace: tt.ns, Name: "web", Project: tt.project}, tt.repo)
			switch {
			case tt.wantRule == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.wantRule != "" && (err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.wantRule)):
				t.Errorf("error = %v, want a refusal naming %q", err, tt.wantRule)
			}
		})
	}
}

func TestCheckAnnotationsCredentials(t *testing.T) {
	cfg := &config.Tenancy{Credentials: []config.TenancyCredential{
		{PullSecret: mustRef(t, "secret:shared/robot#token"), Registries: []string{"*.example.com"}, Namespaces: []string{"team-*"}},
		{PullSecret: mustRef(t, "pullsecret:shared/regcred")},
		{GitSecret: "argocd/git-creds", Namespaces: []string{"team-a"}},
	}}
	ten := &Rules{Config: func() *config.Tenancy { return cfg }, Assignments: ghcrAssigned{}}
	tests := []struct {
		name, ns, secret, image string
		wantRule                string
	}{
		{"own namespace pullsecret", "team-a", "pullsecret:team-a/regcred", "evil.io/x", ""},
		{"own namespace secret field", "team-a", "secret:team-a/tok#t", "evil.io/x", ""},
		{"other namespace", "team-a", "secret:argocd/cluster-x#bearer", "evil.io/x", "not in the Application's namespace"},
		{"env from annotations", "team-a", "env:AWS_SECRET", "evil.io/x", "credentials from annotations are off"},
		{"ext from annotations", "team-a", "ext:/bin/cat", "evil.io/x", "credentials from annotations are off"},
		{"config-assigned stays scoped", "team-a", "secret:team-a/ghcr#token", "evil.io/x", "assigns these credentials to other repositories"},
		{"config-assigned where assigned", "team-a", "secret:team-a/ghcr#token", "ghcr.io/team-a/x", ""},
		{"allow-listed for its registries", "team-b", "secret:shared/robot#token", "r.example.com/x", ""},
		{"allow-listed but other registry", "team-b", "secret:shared/robot#token", "evil.io/x", "not in the Application's namespace"},
		{"allow-listed but other namespace", "prod", "secret:shared/robot#token", "r.example.com/x", "not in the Application's namespace"},
		{"allow-listed pullsecret anywhere", "prod", "pullsecret:shared/regcred", "evil.io/x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := &watcher.App{Namespace: tt.ns, Name: "web", Annotations: map[string]string{
				imageupdate.Prefix + "image-list":      "web=" + tt.image + ",other=other.io/y",
				imageupdate.Prefix + "web.pull-secret": tt.secret,
			}}
			spec, errs := imageupdate.FromAnnotations(app.Annotations)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			errs = ten.CheckAnnotations(app, spec)
			var aliases []string
			for _, img := range spec.Images {
				aliases = append(aliases, img.Alias)
			}
			if tt.wantRule == "" {
				if len(errs) > 0 {
					t.Errorf("refused: %v", errs)
				}
				if diff := cmp.Diff([]string{"web", "other"}, aliases); diff != "" {
					t.Errorf("images kept (-want +got):\n%s", diff)
				}
				return
			}
			if len(errs) != 1 || !errors.Is(errs[0], ErrRefused) || !strings.Contains(errs[0].Error(), tt.wantRule) ||
				!strings.Contains(errs[0].Error(), "annotation "+imageupdate.Prefix+"web.pull-secret") {
				t.Fatalf("errors = %v, want one refusal naming web.pull-secret and %q", errs, tt.wantRule)
			}
			if diff := cmp.Diff([]string{"other"}, aliases); diff != "" {
				t.Errorf("images kept (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckAnnotationsGitSecret(t *testing.T) {
	cfg := &config.Tenancy{Credentials: []config.TenancyCredential{{GitSecret: "argocd/git-creds", Namespaces: []string{"team-a"}}}}
	ten := &Rules{Config: func() *config.Tenancy { return cfg }}
	for _, tt := range []struct {
		ns, method string
		refused    bool
	}{
		{"team-a", "git:secret:team-a/mine", false},
		{"team-a", "git:secret:argocd/git-creds", false},
		{"team-b", "git:secret:argocd/git-creds", true},
		{"team-b", "git:secret:team-a/mine", true},
	} {
		app := &watcher.App{Namespace: tt.ns, Name: "web", Annotations: map[string]string{
			imageupdate.Prefix + "image-list":        "web=r.io/x",
			imageupdate.Prefix + "write-back-method": tt.method,
		}}
		spec, errs := imageupdate.FromAnnotations(app.Annotations)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		errs = ten.CheckAnnotations(app, spec)
		if got := len(errs) > 0; got != tt.refused {
			t.Errorf("%s in %s: refused = %v (%v), want %v", tt.method, tt.ns, got, errs, tt.refused)
		}
		if tt.refused && spec.WriteBack.Method != "" {
			t.Errorf("%s in %s: write-back method %q kept after a refusal", tt.method, tt.ns, spec.WriteBack.Method)
		}
	}
}

func mustRef(t *testing.T, s string) config.CredentialRef {
	t.Helper()
	ref, err := config.ParseCredentialRef(s)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// Repository URLs a pattern cannot pin down are refused before sourceRepos
// are matched: Git clients decode %2F and resolve "..", so
// https://host/team-b/..%2Fteam-a would reach team-a through "team-b/*".
func TestCheckRepositoryRefusesAmbiguousURLs(t *testing.T) {
	proj := project("team-b", []any{"https://git.example.com/team-b/*", "https://git.example.com/team-b/**"}, nil)
	ten := &Rules{Projects: oneProject{proj}}
	app := &watcher.App{Namespace: "argocd", Name: "web", Project: "team-b"}
	for _, u := range []string{
		"https://git.example.com/team-b/..%2Fteam-a%2Fdeploy",
		"https://git.example.com/team-b/..%2fteam-a",
		"https://git.example.com/team-b/%2E%2E/team-a",
		"https://git.example.com/team-b/../team-a/deploy",
		"https://git.example.com/team-b/./x",
		"https://git.example.com/team-b/x?ref=../../team-a",
		"https://git.example.com/team-b/x#frag",
		"https://git.example.com/team-b/x\\..\\team-a",
		"file:///var/lib/repos/team-b/x",
		"/var/lib/repos/team-b/x",
		"https://git.example.com/team-b/x\u00a0",
	} {
		if err := ten.CheckRepository(app, u); !errors.Is(err, ErrRefused) {
			t.Errorf("CheckRepository(%q) = %v, want a refusal", u, err)
		}
	}
	for _, u := range []string{"https://git.example.com/team-b/deploy.git", "https://git.example.com/team-b/a/b"} {
		if err := ten.CheckRepository(app, u); err != nil {
			t.Errorf("CheckRepository(%q) = %v, want it permitted", u, err)
		}
	}
	local := &Rules{LocalRepos: true}
	demo := &watcher.App{Namespace: "demo", Name: "web"}
	if err := local.CheckRepository(demo, "file:///tmp/demo/deploy.git"); err != nil {
		t.Errorf("local mode, file:// repository: %v", err)
	}
	if err := local.CheckRepository(demo, "file:///tmp/demo/../etc/deploy.git"); !errors.Is(err, ErrRefused) {
		t.Errorf("local mode, file:// repository with ..: %v, want a refusal", err)
	}
	open := &Rules{ArgoNamespace: "argocd"}
	if err := open.CheckRepository(&watcher.App{Namespace: "team-a", Name: "web"}, "https://x.example.com/r"); !errors.Is(err, ErrRefused) {
		t.Errorf("no AppProjects known, default project, outside Argo CD's namespace: %v, want a refusal", err)
	}
	if err := open.CheckRepository(&watcher.App{Namespace: "argocd", Name: "web"}, "https://x.example.com/r"); err != nil {
		t.Errorf("no AppProjects known, default project, in Argo CD's namespace: %v", err)
	}
}

// An image policy matches on fields the Application's author writes; one
// naming a project that does not admit its namespace is not served.
func TestAdmitsPolicy(t *testing.T) {
	proj := project("platform", []any{"*"}, []any{"platform-*"})
	ten := &Rules{Projects: oneProject{proj}}
	for _, tt := range []struct {
		ns   string
		want bool
	}{{"argocd", true}, {"platform-prod", true}, {"team-a", false}} {
		err := ten.AdmitsPolicy(&watcher.App{Namespace: tt.ns, Name: "web", Project: "platform"})
		if got := err == nil; got != tt.want {
			t.Errorf("AdmitsPolicy in %s = %v, want admitted %v", tt.ns, err, tt.want)
		}
	}
	if err := (&Rules{}).AdmitsPolicy(&watcher.App{Namespace: "x", Name: "web"}); err != nil {
		t.Errorf("no AppProjects known: %v", err)
	}
}

// An image policy never serves an Application whose AppProject does not
// exist (Argo CD does not deploy it either), nor one outside Argo CD's
// namespace that names a missing default project: both fail closed.
func TestAdmitsPolicyUnknownProject(t *testing.T) {
	ten := &Rules{Projects: oneProject{}, ArgoNamespace: "argocd"}
	for _, tt := range []struct {
		ns, project string
		wantRule    string
	}{
		{"argocd", "", ""},
		{"argocd", "default", ""},
		{"team-a", "", "AppProject default is not in Argo CD's namespace"},
		{"team-a", "ghost", "AppProject ghost is not known"},
		{"argocd", "ghost", "AppProject ghost is not known"},
	} {
		err := ten.AdmitsPolicy(&watcher.App{Namespace: tt.ns, Name: "web", Project: tt.project})
		switch {
		case tt.wantRule == "" && err != nil:
			t.Errorf("%s/%q refused: %v", tt.ns, tt.project, err)
		case tt.wantRule != "" && (!errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.wantRule)):
			t.Errorf("%s/%q: error = %v, want a refusal naming %q", tt.ns, tt.project, err, tt.wantRule)
		}
	}
}

// tenancy.registries, when set, bounds the registries an annotation's
// image-list may make crowsnest contact; the other images are kept.
func TestCheckAnnotationsRegistries(t *testing.T) {
	ten := &Rules{Config: func() *config.Tenancy { return &config.Tenancy{Registries: []string{"ghcr.io", "*.example.com"}} }}
	app := &watcher.App{Namespace: "team-a", Name: "web", Annotations: map[string]string{
		imageupdate.Prefix + "image-list": "a=ghcr.io/org/a,b=r.example.com/b,c=10.0.0.5:5000/internal,d=GHCR.io/org/d",
	}}
	spec, errs := imageupdate.FromAnnotations(app.Annotations)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	errs = ten.CheckAnnotations(app, spec)
	var aliases []string
	for _, img := range spec.Images {
		aliases = append(aliases, img.Alias)
	}
	if diff := cmp.Diff([]string{"a", "b", "d"}, aliases); diff != "" {
		t.Errorf("images kept (-want +got):\n%s", diff)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrRefused) || !strings.Contains(errs[0].Error(), "registry 10.0.0.5:5000 is not in tenancy.registries") {
		t.Errorf("errors = %v, want one refusal naming the registry", errs)
	}
}

// tenancy.writePaths widens where an Application writes: an entry that
// names a project selects only Applications that AppProject admits, as
// spec.project is their author's to write.
func TestWritePaths(t *testing.T) {
	projects := map[string]*watcher.Project{
		"platform": project("platform", []any{"*"}, []any{"platform-*"}),
	}
	ten := &Rules{
		Config: func() *config.Tenancy {
			return &config.Tenancy{WritePaths: []config.TenancyWritePath{
				{Projects: []string{"platform"}, Paths: []string{"/shared/**"}},
				{Namespaces: []string{"team-a"}, Paths: []string{"/team-a/**"}},
				{Projects: []string{"default"}, Paths: []string{"/defaults/**"}},
			}}
		},
		Projects:      projectsByName(projects),
		ArgoNamespace: "argocd",
	}
	tests := []struct {
		name, ns, project string
		want              []string
	}{
		{"admitted by the project", "platform-prod", "platform", []string{"/shared/**"}},
		{"the project's own namespace", "argocd", "platform", []string{"/shared/**"}},
		{"names a project that does not admit it", "team-b", "platform", nil},
		{"by namespace", "team-a", "platform", []string{"/team-a/**"}},
		{"Argo CD's default project in its namespace", "argocd", "", []string{"/defaults/**"}},
		{"the default project from another namespace", "team-b", "default", nil},
		{"an unknown project", "platform-prod", "nope", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ten.WritePaths(&watcher.App{Namespace: tt.ns, Name: "web", Project: tt.project})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("WritePaths (-want +got):\n%s", diff)
			}
		})
	}
	if got := (*Rules)(nil).WritePaths(&watcher.App{Namespace: "team-a", Name: "web"}); got != nil {
		t.Errorf("no rules: %v", got)
	}
}

// projectsByName is a Projects that finds an Application's AppProject by
// its name alone.
type projectsByName map[string]*watcher.Project

func (p projectsByName) Project(a *watcher.App) *watcher.Project { return p[a.Project] }

// oneProject is a Projects under which every Application belongs to the
// one AppProject (none when nil).
type oneProject struct{ p *watcher.Project }

func (o oneProject) Project(*watcher.App) *watcher.Project { return o.p }

// ghcrAssigned is the registries config that assigns
// secret:team-a/ghcr#token to ghcr.io's repositories only.
type ghcrAssigned struct{}

func (ghcrAssigned) Assigned(ref config.CredentialRef, repo string) (configured, here bool) {
	if ref.String() != "secret:team-a/ghcr#token" {
		return false, false
	}
	return true, strings.HasPrefix(repo, "ghcr.io/")
}
