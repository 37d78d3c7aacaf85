package imageupdate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

// ann builds annotations from "key: value" pairs without the prefix.
func ann(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[Prefix+kv[i]] = kv[i+1]
	}
	return m
}

func TestFromAnnotations(t *testing.T) {
	type img struct {
		Alias, Name, Repo, PullSecret string
		Policy                        policy.Spec
		Force                         bool
		Helm                          HelmNames
		Kustomize                     string
	}
	tests := []struct {
		name   string
		in     map[string]string
		images []img
		wb     WriteBack
	}{
		{
			name:   "one image, defaults",
			in:     ann("image-list", "nginx"),
			images: []img{{Alias: "nginx", Name: "nginx", Repo: "docker.io/library/nginx"}},
			wb:     WriteBack{Method: MethodArgoCD, Target: Target{Kind: TargetArgoCDSource}},
		},
		{
			name: "aliases, constraints, a registry port and per-alias settings over app-wide ones",
			in: ann("image-list", " web=ghcr.io/org/web:~1.2 , api=registry.local:5000/team/api,sidecar=busybox:stable",
				"update-strategy", "semver", "allow-tags", "regexp:^v?[0-9]", "ignore-tags", "*-debug, *-rc*",
				"api.update-strategy", "newest-build", "api.platforms", "linux/amd64, linux/arm64",
				"api.pull-secret", "pullsecret:argocd/regcred", "api.force-update", "true",
				"web.helm.image-name", "web.image.repository", "web.helm.image-tag", "web.image.tag",
				"sidecar.kustomize.image-name", "busybox-base", "sidecar.update-strategy", "digest", "sidecar.allow-tags", "any"),
			images: []img{
				{Alias: "web", Name: "ghcr.io/org/web", Repo: "ghcr.io/org/web",
					Policy: policy.Spec{Strategy: "semver", Constraint: "~1.2", AllowTags: "regexp:^v?[0-9]", IgnoreTags: []string{"*-debug", "*-rc*"}},
					Helm:   HelmNames{ImageName: "web.image.repository", ImageTag: "web.image.tag"}},
				{Alias: "api", Name: "registry.local:5000/team/api", Repo: "registry.local:5000/team/api", PullSecret: "pullsecret:argocd/regcred", Force: true,
					Policy: policy.Spec{Strategy: "newest-build", AllowTags: "regexp:^v?[0-9]", IgnoreTags: []string{"*-debug", "*-rc*"}, Platforms: []string{"linux/amd64", "linux/arm64"}}},
				{Alias: "sidecar", Name: "busybox", Repo: "docker.io/library/busybox", Kustomize: "busybox-base",
					Policy: policy.Spec{Strategy: "digest", Constraint: "stable", AllowTags: "any", IgnoreTags: []string{"*-debug", "*-rc*"}}},
			},
			wb: WriteBack{Method: MethodArgoCD, Target: Target{Kind: TargetArgoCDSource}},
		},
		{
			name: "git write-back to a kustomization on a base:target branch",
			in: ann("image-list", "app=ghcr.io/org/app", "write-back-method", "git:secret:argocd/git-creds",
				"write-back-target", "kustomization:../../base", "git-branch", "main:image-updater-{{.SHA256}}",
				"git-repository", "https://git.example.com/org/deploy.git"),
			images: []img{{Alias: "app", Name: "ghcr.io/org/app", Repo: "ghcr.io/org/app"}},
			wb: WriteBack{Method: MethodGit, GitCredentials: "secret:argocd/git-creds",
				Target: Target{Kind: TargetKustomization, Path: "../../base"}, Branch: "main",
				PushBranch: "image-updater-{{.SHA256}}", Repository: "https://git.example.com/org/deploy.git"},
		},
		{
			name:   "git with repocreds and helm values",
			in:     ann("image-list", "app=ghcr.io/org/app", "write-back-method", "git:repocreds", "write-back-target", "helmvalues:/env/prod/values.yaml"),
			images: []img{{Alias: "app", Name: "ghcr.io/org/app", Repo: "ghcr.io/org/app"}},
			wb:     WriteBack{Method: MethodGit, GitCredentials: "repocreds", Target: Target{Kind: TargetHelmValues, Path: "/env/prod/values.yaml"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, errs := FromAnnotations(tt.in)
			if len(errs) > 0 {
				t.Fatalf("errors: %v", errors.Join(errs...))
			}
			var got []img
			for _, i := range spec.Images {
				got = append(got, img{Alias: i.Alias, Name: i.Name, Repo: i.Ref.Repo(), PullSecret: i.PullSecret,
					Policy: i.Policy, Force: i.ForceUpdate, Helm: i.Helm, Kustomize: i.KustomizeName})
			}
			if diff := cmp.Diff(tt.images, got); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wb, spec.WriteBack); diff != "" {
				t.Errorf("write-back (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNoImageListMeansUnmanaged(t *testing.T) {
	spec, errs := FromAnnotations(map[string]string{"other.io/x": "y", Prefix + "update-strategy": "semver"})
	if spec != nil || errs != nil {
		t.Errorf("FromAnnotations() = %+v, %v; want nil, nil", spec, errs)
	}
}

// Each malformed annotation is reported with its key; the rest of the
// Application's images survive.
func TestMalformedAnnotations(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]string
		key     string // the annotation the error must name
		msg     string
		images  []string // aliases that survive
		noWrite bool     // write-back unusable
	}{
		{name: "bad image reference", in: ann("image-list", "ok=nginx, bad=UPPER/Case!"), key: "image-list", msg: "UPPER/Case!", images: []string{"ok"}},
		{name: "bad constraint", in: ann("image-list", "ok=nginx, bad=redis:>>1"), key: "image-list", msg: "invalid semver range", images: []string{"ok"}},
		{name: "unknown strategy", in: ann("image-list", "ok=nginx, bad=redis", "bad.update-strategy", "newest"), key: "bad.update-strategy", msg: `unknown strategy "newest": want semver, newest-build, digest or alphabetical; semver is used`, images: []string{"ok", "bad"}},
		{name: "bad allow-tags regexp", in: ann("image-list", "ok=nginx, bad=redis", "bad.allow-tags", "regexp:("), key: "bad.allow-tags", msg: "invalid regexp", images: []string{"ok"}},
		{name: "bad allow-tags form", in: ann("image-list", "ok=nginx", "allow-tags", "^v1"), key: "allow-tags", msg: `want "any" or "regexp:<re>"`, images: nil},
		{name: "bad platform", in: ann("image-list", "ok=nginx, bad=redis", "bad.platforms", "linux", "bad.update-strategy", "newest-build"), key: "bad.platforms", msg: "want os/arch", images: []string{"ok"}},
		{name: "bad pull secret", in: ann("image-list", "ok=nginx, bad=redis", "bad.pull-secret", "vault:x"), key: "bad.pull-secret", msg: "vault", images: []string{"ok"}},
		{name: "bad force-update", in: ann("image-list", "ok=nginx, bad=redis", "bad.force-update", "yes please"), key: "bad.force-update", msg: "not true or false", images: []string{"ok"}},
		{name: "digest without a tag to track", in: ann("image-list", "ok=nginx, bad=redis", "bad.update-strategy", "digest"), key: "image-list", msg: "needs the tag to track", images: []string{"ok"}},
		{name: "duplicate alias", in: ann("image-list", "a=nginx, a=redis"), key: "image-list", msg: `alias "a" is used twice`, images: []string{"a"}},
		{name: "bad alias", in: ann("image-list", "ok=nginx, b@d=redis"), key: "image-list", msg: `alias "b@d"`, images: []string{"ok"}},
		{name: "empty entry", in: ann("image-list", "nginx,,redis"), key: "image-list", msg: "entry 2 is empty", images: []string{"nginx", "redis"}},
		{name: "both helm forms", in: ann("image-list", "ok=nginx, bad=redis", "bad.helm.image-spec", "image", "bad.helm.image-tag", "image.tag"), key: "bad.helm.image-spec", msg: "helm.image-spec is used", images: []string{"ok", "bad"}},
		{name: "unknown write-back method", in: ann("image-list", "ok=nginx", "write-back-method", "svn"), key: "write-back-method", msg: `unknown method "svn"`, images: []string{"ok"}, noWrite: true},
		{name: "bad git secret", in: ann("image-list", "ok=nginx", "write-back-method", "git:secret:Bad_NS/x"), key: "write-back-method", msg: "git:secret:<namespace>/<name>", images: []string{"ok"}, noWrite: true},
		{name: "unknown write-back target", in: ann("image-list", "ok=nginx", "write-back-method", "git", "write-back-target", "jsonnet:x"), key: "write-back-target", msg: "unknown target", images: []string{"ok"}, noWrite: true},
		{name: "target without git", in: ann("image-list", "ok=nginx", "write-back-target", "kustomization"), key: "write-back-target", msg: "needs write-back-method git; ignored", images: []string{"ok"}},
		{name: "bad branch template", in: ann("image-list", "ok=nginx", "write-back-method", "git", "git-branch", "main:upd-{{.Foo"), key: "git-branch", msg: "template", images: []string{"ok"}, noWrite: true},
		{name: "branch with dots", in: ann("image-list", "ok=nginx", "write-back-method", "git", "git-branch", "a..b"), key: "git-branch", msg: `invalid branch name "a..b": contains ".."`, images: []string{"ok"}, noWrite: true},
		{name: "helm range as the branch", in: ann("image-list", "ok=nginx", "write-back-method", "git", "git-branch", "1.*"), key: "git-branch", msg: `invalid branch name "1.*": contains '*'`, images: []string{"ok"}, noWrite: true},
		{name: "base ending in .lock", in: ann("image-list", "ok=nginx", "write-back-method", "git", "git-branch", "main.lock:upd-{{.SHA256}}"), key: "git-branch", msg: `ends with ".lock"`, images: []string{"ok"}, noWrite: true},
		{name: "target with dots", in: ann("image-list", "ok=nginx", "write-back-method", "git", "git-branch", ":up..dates"), key: "git-branch", msg: `target branch: invalid branch name "up..dates"`, images: []string{"ok"}, noWrite: true},
		{name: "typo in a key", in: ann("image-list", "ok=nginx", "ok.update-stratgy", "semver"), key: "ok.update-stratgy", msg: "unknown key", images: []string{"ok"}},
		{name: "setting for an undeclared alias", in: ann("image-list", "ok=nginx", "other.update-strategy", "semver"), key: "other.update-strategy", msg: "unknown key", images: []string{"ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, errs := FromAnnotations(tt.in)
			if spec == nil {
				t.Fatal("spec is nil")
			}
			var found bool
			for _, err := range errs {
				var ae *AnnotationError
				if !errors.As(err, &ae) {
					t.Errorf("error %v is not an *AnnotationError", err)
					continue
				}
				if ae.Key == Prefix+tt.key && strings.Contains(ae.Error(), tt.msg) {
					found = true
				}
			}
			if !found {
				t.Errorf("no error naming %s%s with %q; got %v", Prefix, tt.key, tt.msg, errors.Join(errs...))
			}
			var aliases []string
			for _, i := range spec.Images {
				aliases = append(aliases, i.Alias)
			}
			if diff := cmp.Diff(tt.images, aliases); diff != "" {
				t.Errorf("surviving images (-want +got):\n%s", diff)
			}
			if got := spec.WriteBack.Method == ""; got != tt.noWrite {
				t.Errorf("write-back unusable = %v, want %v", got, tt.noWrite)
			}
		})
	}
}

func TestSplitConstraint(t *testing.T) {
	tests := []struct{ in, name, constraint string }{
		{"nginx", "nginx", ""},
		{"nginx:1.x", "nginx", "1.x"},
		{"registry.local:5000/app", "registry.local:5000/app", ""},
		{"registry.local:5000/app:~1.2", "registry.local:5000/app", "~1.2"},
		{"ghcr.io/org/app:>=1.0 <2", "ghcr.io/org/app", ">=1.0 <2"},
	}
	for _, tt := range tests {
		name, c := splitConstraint(tt.in)
		if name != tt.name || c != tt.constraint {
			t.Errorf("splitConstraint(%q) = %q, %q; want %q, %q", tt.in, name, c, tt.name, tt.constraint)
		}
	}
}

func FuzzFromAnnotations(f *testing.F) {
	f.Add("a=nginx:~1.2, b=ghcr.io/x/y", "semver", "regexp:^v", "*-rc,regexp:x", "git:secret:ns/n", "kustomization:../b", "main:t-{{.X}}")
	f.Add("", "", "", "", "", "", "")
	f.Add("x=reg:5000/a:b:c", "digest", "any", ",,", "git", "helmvalues:/v.yaml", "a:")
	f.Fuzz(func(t *testing.T, list, strategy, allow, ignore, method, target, branch string) {
		in := ann("image-list", list, "update-strategy", strategy, "allow-tags", allow, "ignore-tags", ignore,
			"write-back-method", method, "write-back-target", target, "git-branch", branch)
		spec, errs := FromAnnotations(in)
		if spec == nil {
			t.Fatal("nil spec with an image-list")
		}
		for _, err := range errs {
			var ae *AnnotationError
			if !errors.As(err, &ae) || !strings.HasPrefix(ae.Key, Prefix) {
				t.Fatalf("error %v does not name an annotation", err)
			}
		}
		for i := range spec.Images {
			img := &spec.Images[i]
			if _, err := policy.Compile(img.Ref.Repo(), img.Policy); err != nil {
				t.Fatalf("image %q kept with a policy that does not compile: %v", img.Alias, err)
			}
		}
	})
}

// argocd-image-updater lets an alias hold '/' and spells it '_' in the
// alias's option keys (ContainerImage.normalizedSymbolicName, 0.x): an
// annotation key holds a single '/'.
func TestAliasWithSlash(t *testing.T) {
	spec, errs := FromAnnotations(ann(
		"image-list", "team/web=ghcr.io/team/web",
		"team_web.update-strategy", "newest-build",
		"team_web.helm.image-tag", "web.image.tag",
		"team_web.pull-secret", "pullsecret:team/regcred",
	))
	if len(errs) > 0 || spec == nil || len(spec.Images) != 1 {
		t.Fatalf("spec %+v, errors %v", spec, errs)
	}
	img := spec.Images[0]
	if img.Alias != "team/web" || img.Policy.Strategy != "newest-build" || img.Helm.ImageTag != "web.image.tag" || img.PullSecret != "pullsecret:team/regcred" {
		t.Errorf("image = %+v, want alias team/web with its team_web.* settings", img)
	}
	if _, errs := FromAnnotations(ann("image-list", "team/web=ghcr.io/team/web", "team_wbe.update-strategy", "semver")); len(errs) != 1 {
		t.Errorf("a misspelt option key gave errors %v, want one unknown key", errs)
	}
}

// "git:secret:<name>" is a Secret in the Application's namespace, as
// argocd-image-updater reads it (pkg/argocd/gitcreds.go,
// getCredsFromSecret); ResolveIn names the namespace.
func TestGitSecretWithoutNamespaceIsTheApplications(t *testing.T) {
	spec, errs := FromAnnotations(ann("image-list", "ok=nginx", "write-back-method", "git:secret:git-creds"))
	if len(errs) != 0 || spec.WriteBack.Method != MethodGit {
		t.Fatalf("write-back %+v, errors %v", spec.WriteBack, errs)
	}
	spec.ResolveIn("team-a")
	if got := spec.WriteBack.GitCredentials; got != "secret:team-a/git-creds" {
		t.Errorf("credentials %q, want secret:team-a/git-creds", got)
	}
	spec.ResolveIn("team-b") // a namespace once named stays
	if got := spec.WriteBack.GitCredentials; got != "secret:team-a/git-creds" {
		t.Errorf("credentials %q after a second ResolveIn", got)
	}
}
