package imageupdate

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

// Where argocd-image-updater (AIU) writes the facts below down: paths in
// github.com/argoproj-labs/argocd-image-updater.
const (
	aiuAnnotationsGo  = "pkg/argocd/annotations.go"
	aiuArgocdGo       = "pkg/argocd/argocd.go"
	aiuGitCredsGo     = "pkg/argocd/gitcreds.go"
	aiuConstantsGo    = "pkg/common/constants.go"
	aiuImagesDoc      = "docs/configuration/images.md"
	aiuMethodsDoc     = "docs/basics/update-methods.md"
	aiuStrategiesDoc  = "docs/basics/update-strategies.md"
	aiuCredentialsGo  = "registry-scanner/pkg/image/credentials.go"
	aiuImageOptionsGo = "registry-scanner/pkg/image/options.go"
)

// factImage is what an AIU fact says about one image of image-list.
type factImage struct {
	Alias, Name string
	Policy      policy.Spec
	PullSecret  string
	Force       bool
	Helm        HelmNames
	Kustomize   string
}

func factImages(spec *Spec) []factImage {
	var out []factImage
	for i := range spec.Images {
		im := &spec.Images[i]
		out = append(out, factImage{Alias: im.Alias, Name: im.Name, Policy: im.Policy, PullSecret: im.PullSecret,
			Force: im.ForceUpdate, Helm: im.Helm, Kustomize: im.KustomizeName})
	}
	return out
}

// errKeys returns the annotation keys (without Prefix) errs name, sorted.
func errKeys(errs []error) []string {
	var out []string
	for _, err := range errs {
		var ae *AnnotationError
		if errors.As(err, &ae) {
			out = append(out, ae.Key[len(Prefix):])
		}
	}
	slices.Sort(out)
	return out
}

var argocdWB = WriteBack{Method: MethodArgoCD, Target: Target{Kind: TargetArgoCDSource}}

// TestAIUAnnotationFacts reads argocd-image-updater annotations as AIU
// documents (or codes) them and checks what crowsnest makes of them:
// aliases, per-image and app-wide settings, Helm and kustomize names,
// pull-secret forms, force-update and the write-back forms. wantErrs are
// the keys crowsnest must report (visible), even where AIU ignores them.
func TestAIUAnnotationFacts(t *testing.T) {
	tests := []struct {
		name     string
		source   string
		in       map[string]string
		images   []factImage
		wb       *WriteBack // nil: not checked
		wantErrs []string
	}{
		// Aliases and settings.
		{name: "an alias with '/' is spelt '_' in its option keys", source: aiuImagesDoc + " (Assigning aliases to images)",
			in: ann("image-list", "argoproj/argocd=quay.io/argoproj/argocd:~2.0", "argoproj_argocd.update-strategy", "newest-build",
				"argoproj_argocd.allow-tags", "regexp:^v"),
			images: []factImage{{Alias: "argoproj/argocd", Name: "quay.io/argoproj/argocd",
				Policy: policy.Spec{Strategy: "newest-build", AllowTags: "regexp:^v"}}}},
		{name: "newest-build and alphabetical ignore the constraint", source: "registry-scanner/pkg/image/version.go (GetNewestVersionFromTags)",
			in: ann("image-list", "a=ghcr.io/o/a:latest,b=ghcr.io/o/b:main", "a.update-strategy", "latest", "b.update-strategy", "alphabetical"),
			images: []factImage{{Alias: "a", Name: "ghcr.io/o/a", Policy: policy.Spec{Strategy: "latest"}},
				{Alias: "b", Name: "ghcr.io/o/b", Policy: policy.Spec{Strategy: "alphabetical"}}}},
		{name: "digest tracks the constraint's tag", source: aiuStrategiesDoc,
			in:     ann("image-list", "a=ghcr.io/o/a:latest", "a.update-strategy", "digest"),
			images: []factImage{{Alias: "a", Name: "ghcr.io/o/a", Policy: policy.Spec{Strategy: "digest", Constraint: "latest"}}}},
		{name: "digest without a constraint is refused", source: "registry-scanner/pkg/registry/registry.go (\"cannot use update strategy 'digest'\")",
			in:       ann("image-list", "a=ghcr.io/o/a", "a.update-strategy", "digest"),
			wantErrs: []string{"image-list"}},
		{name: "the constraint follows the image after ':'", source: aiuStrategiesDoc,
			in:     ann("image-list", "some=some/image:1.2.x"),
			images: []factImage{{Alias: "some", Name: "some/image", Policy: policy.Spec{Constraint: "1.2.x"}}}},
		{name: "app-wide settings apply to images without their own", source: aiuAnnotationsGo + " (getImageUpdateStrategyAnnotations with alias \"\")",
			in: ann("image-list", "a=ghcr.io/o/a, ghcr.io/o/b", "update-strategy", "alphabetical", "ignore-tags", "latest, master",
				"allow-tags", "regexp:^[0-9]", "pull-secret", "env:REGCREDS", "force-update", "true"),
			images: []factImage{
				{Alias: "a", Name: "ghcr.io/o/a", Policy: policy.Spec{Strategy: "alphabetical", AllowTags: "regexp:^[0-9]", IgnoreTags: []string{"latest", "master"}}, PullSecret: "env:REGCREDS", Force: true},
				{Alias: "ghcr.io/o/b", Name: "ghcr.io/o/b", Policy: policy.Spec{Strategy: "alphabetical", AllowTags: "regexp:^[0-9]", IgnoreTags: []string{"latest", "master"}}, PullSecret: "env:REGCREDS", Force: true},
			}},
		{name: "a per-image setting wins over the app-wide one", source: aiuStrategiesDoc + " (image level takes precedence)",
			in:     ann("image-list", "a=ghcr.io/o/a", "update-strategy", "alphabetical", "a.update-strategy", "newest-build", "a.ignore-tags", "x"),
			images: []factImage{{Alias: "a", Name: "ghcr.io/o/a", Policy: policy.Spec{Strategy: "newest-build", IgnoreTags: []string{"x"}}}},
		},
		{name: "an unknown strategy falls back to semver", source: aiuImagesDoc + " (\"or an invalid value is used, the default strategy semver\"), " + aiuImageOptionsGo,
			in:       ann("image-list", "a=ghcr.io/o/a:1.x", "a.update-strategy", "newest"),
			images:   []factImage{{Alias: "a", Name: "ghcr.io/o/a", Policy: policy.Spec{Constraint: "1.x"}}},
			wantErrs: []string{"a.update-strategy"}},
		{name: "strategy names are case-insensitive", source: aiuImageOptionsGo + " (ParseUpdateStrategy lower-cases)",
			in:     ann("image-list", "a=ghcr.io/o/a:latest", "a.update-strategy", "Newest-Build"),
			images: []factImage{{Alias: "a", Name: "ghcr.io/o/a", Policy: policy.Spec{Strategy: "Newest-Build"}}}},
		{name: "platforms are per image: several, comma separated", source: aiuImagesDoc + " (Image platforms), " + aiuAnnotationsGo,
			in:     ann("image-list", "a=ghcr.io/o/a", "a.platforms", "linux/arm64, linux/amd64", "a.update-strategy", "newest-build"),
			images: []factImage{{Alias: "a", Name: "ghcr.io/o/a", Policy: policy.Spec{Strategy: "newest-build", Platforms: []string{"linux/arm64", "linux/amd64"}}}}},
		{name: "platforms have no effect with semver and alphabetical", source: aiuImagesDoc + " (\"For semver and name strategies, the platforms setting has no effect\")",
			in:       ann("image-list", "a=ghcr.io/o/a,b=ghcr.io/o/b", "a.platforms", "linux/arm64", "b.platforms", "linux/arm64", "b.update-strategy", "name"),
			images:   []factImage{{Alias: "a", Name: "ghcr.io/o/a"}, {Alias: "b", Name: "ghcr.io/o/b", Policy: policy.Spec{Strategy: "name"}}},
			wantErrs: []string{"a.platforms", "b.platforms"}},
		{name: "platforms filter digest", source: aiuImagesDoc + " (Image platforms)",
			in:     ann("image-list", "a=ghcr.io/o/a:stable", "a.platforms", "linux/arm64", "a.update-strategy", "digest"),
			images: []factImage{{Alias: "a", Name: "ghcr.io/o/a", Policy: policy.Spec{Strategy: "digest", Constraint: "stable", Platforms: []string{"linux/arm64"}}}}},
		{name: "an app-wide platforms annotation is not read", source: aiuAnnotationsGo + " (\"Platforms was only image-specific\")",
			in:       ann("image-list", "a=ghcr.io/o/a", "platforms", "linux/arm64", "update-strategy", "newest-build"),
			images:   []factImage{{Alias: "a", Name: "ghcr.io/o/a", Policy: policy.Spec{Strategy: "newest-build"}}},
			wantErrs: []string{"platforms"}},
		{name: "an image without alias takes no per-image keys", source: aiuAnnotationsGo + " (settings read for aliased images only)",
			in:       ann("image-list", "nginx", "nginx.update-strategy", "newest-build"),
			images:   []factImage{{Alias: "nginx", Name: "nginx"}},
			wantErrs: []string{"nginx.update-strategy"}},
		{name: "force-update takes strconv.ParseBool's forms", source: aiuAnnotationsGo + " (strconv.ParseBool)",
			in:     ann("image-list", "a=ghcr.io/o/a,b=ghcr.io/o/b", "a.force-update", "1", "b.force-update", "TRUE"),
			images: []factImage{{Alias: "a", Name: "ghcr.io/o/a", Force: true}, {Alias: "b", Name: "ghcr.io/o/b", Force: true}}},
		{name: "force-update that is not a bool is an error", source: aiuAnnotationsGo + " (\"error parsing force update settings\")",
			in:       ann("image-list", "a=ghcr.io/o/a,b=ghcr.io/o/b", "a.force-update", "yes"),
			images:   []factImage{{Alias: "b", Name: "ghcr.io/o/b"}},
			wantErrs: []string{"a.force-update"}},
		// Helm and kustomize names.
		{name: "helm image-name and image-tag name the parameters", source: aiuAnnotationsGo + " (HelmParamImageNameAnnotationSuffix)",
			in:     ann("image-list", "web=ghcr.io/o/web", "web.helm.image-name", "web.image.repository", "web.helm.image-tag", "web.image.tag"),
			images: []factImage{{Alias: "web", Name: "ghcr.io/o/web", Helm: HelmNames{ImageName: "web.image.repository", ImageTag: "web.image.tag"}}}},
		{name: "helm image-spec names one parameter for the whole reference", source: aiuAnnotationsGo + " (HelmParamImageSpecAnnotationSuffix)",
			in:     ann("image-list", "web=ghcr.io/o/web", "web.helm.image-spec", "web.image"),
			images: []factImage{{Alias: "web", Name: "ghcr.io/o/web", Helm: HelmNames{ImageSpec: "web.image"}}}},
		{name: "helm image-spec wins over image-name and image-tag", source: aiuArgocdGo + " (newImageFromManifestTargetSettings)",
			in:       ann("image-list", "web=ghcr.io/o/web", "web.helm.image-spec", "web.image", "web.helm.image-name", "web.name"),
			images:   []factImage{{Alias: "web", Name: "ghcr.io/o/web", Helm: HelmNames{ImageSpec: "web.image"}}},
			wantErrs: []string{"web.helm.image-spec"}},
		{name: "kustomize image-name names the image to replace", source: aiuImagesDoc + " (Custom images with Kustomize)",
			in:     ann("image-list", "argocd=ghcr.io/me/argocd", "argocd.kustomize.image-name", "quay.io/argoproj/argocd"),
			images: []factImage{{Alias: "argocd", Name: "ghcr.io/me/argocd", Kustomize: "quay.io/argoproj/argocd"}}},
		// Pull secrets.
		{name: "pull-secret forms: pullsecret:, secret:, env:, ext:", source: aiuImagesDoc + " (Specifying pull secrets), " + aiuCredentialsGo,
			in: ann("image-list", "a=ghcr.io/o/a,b=ghcr.io/o/b,c=ghcr.io/o/c,d=ghcr.io/o/d",
				"a.pull-secret", "pullsecret:argocd/regcred", "b.pull-secret", "secret:argocd/creds#token",
				"c.pull-secret", "env:REGISTRY_SECRET", "d.pull-secret", "ext:/app/scripts/auth.sh"),
			images: []factImage{
				{Alias: "a", Name: "ghcr.io/o/a", PullSecret: "pullsecret:argocd/regcred"},
				{Alias: "b", Name: "ghcr.io/o/b", PullSecret: "secret:argocd/creds#token"},
				{Alias: "c", Name: "ghcr.io/o/c", PullSecret: "env:REGISTRY_SECRET"},
				{Alias: "d", Name: "ghcr.io/o/d", PullSecret: "ext:/app/scripts/auth.sh"},
			}},
		{name: "ext: needs an absolute path; secret: needs its #field", source: aiuImagesDoc + " (\"must be specified using an absolute path\")",
			in:       ann("image-list", "a=ghcr.io/o/a,b=ghcr.io/o/b", "a.pull-secret", "ext:auth.sh", "b.pull-secret", "secret:argocd/creds"),
			wantErrs: []string{"a.pull-secret", "b.pull-secret"}},
		// Write-back.
		{name: "write-back-method defaults to argocd", source: aiuMethodsDoc,
			in: ann("image-list", "a=ghcr.io/o/a"), images: []factImage{{Alias: "a", Name: "ghcr.io/o/a"}}, wb: &argocdWB},
		{name: "write-back-method git uses the repository's credentials", source: aiuArgocdGo + " (creds := \"repocreds\")",
			in: ann("image-list", "a=ghcr.io/o/a", "write-back-method", "git"), images: []factImage{{Alias: "a", Name: "ghcr.io/o/a"}},
			wb: &WriteBack{Method: MethodGit, Target: Target{Kind: TargetArgoCDSource}}},
		{name: "write-back-method git:repocreds", source: aiuGitCredsGo,
			in: ann("image-list", "a=ghcr.io/o/a", "write-back-method", "git:repocreds"), images: []factImage{{Alias: "a", Name: "ghcr.io/o/a"}},
			wb: &WriteBack{Method: MethodGit, GitCredentials: "repocreds", Target: Target{Kind: TargetArgoCDSource}}},
		{name: "write-back-method git:secret:<ns>/<name>", source: aiuGitCredsGo,
			in: ann("image-list", "a=ghcr.io/o/a", "write-back-method", "git:secret:argocd/git-creds"), images: []factImage{{Alias: "a", Name: "ghcr.io/o/a"}},
			wb: &WriteBack{Method: MethodGit, GitCredentials: "secret:argocd/git-creds", Target: Target{Kind: TargetArgoCDSource}}},
		{name: "an unknown write-back-method is refused", source: aiuArgocdGo + " (\"invalid update mechanism\")",
			in: ann("image-list", "a=ghcr.io/o/a", "write-back-method", "svn"), images: []factImage{{Alias: "a", Name: "ghcr.io/o/a"}},
			wb: &WriteBack{Target: Target{Kind: TargetArgoCDSource}}, wantErrs: []string{"write-back-method"}},
		{name: "write-back-target kustomization, relative and absolute", source: aiuMethodsDoc,
			in:     ann("image-list", "a=ghcr.io/o/a", "write-back-method", "git", "write-back-target", "kustomization:../../base"),
			images: []factImage{{Alias: "a", Name: "ghcr.io/o/a"}},
			wb:     &WriteBack{Method: MethodGit, Target: Target{Kind: TargetKustomization, Path: "../../base"}}},
		{name: "write-back-target kustomization alone is the source path", source: aiuMethodsDoc,
			in:     ann("image-list", "a=ghcr.io/o/a", "write-back-method", "git", "write-back-target", "kustomization"),
			images: []factImage{{Alias: "a", Name: "ghcr.io/o/a"}},
			wb:     &WriteBack{Method: MethodGit, Target: Target{Kind: TargetKustomization}}},
		{name: "write-back-target helmvalues with an absolute path", source: aiuMethodsDoc,
			in:     ann("image-list", "a=ghcr.io/o/a", "write-back-method", "git", "write-back-target", "helmvalues:/helm/config/test-values.yaml"),
			images: []factImage{{Alias: "a", Name: "ghcr.io/o/a"}},
			wb:     &WriteBack{Method: MethodGit, Target: Target{Kind: TargetHelmValues, Path: "/helm/config/test-values.yaml"}}},
		{name: "write-back-target is ignored by the argocd method", source: aiuArgocdGo + " (argocd method returns before reading the target)",
			in: ann("image-list", "a=ghcr.io/o/a", "write-back-target", "kustomization"), images: []factImage{{Alias: "a", Name: "ghcr.io/o/a"}},
			wb: &argocdWB, wantErrs: []string{"write-back-target"}},
		{name: "git-branch base:target", source: aiuMethodsDoc,
			in:     ann("image-list", "a=ghcr.io/o/a", "write-back-method", "git", "git-branch", "main:image-updater{{range .Images}}-{{.Name}}{{end}}"),
			images: []factImage{{Alias: "a", Name: "ghcr.io/o/a"}},
			wb: &WriteBack{Method: MethodGit, Target: Target{Kind: TargetArgoCDSource}, Branch: "main",
				PushBranch: "image-updater{{range .Images}}-{{.Name}}{{end}}"}},
		{name: "git-repository overrides the source's", source: aiuAnnotationsGo + " (GitRepositoryAnnotation)",
			in:     ann("image-list", "a=ghcr.io/o/a", "write-back-method", "git", "git-repository", "git@github.com:org/config.git"),
			images: []factImage{{Alias: "a", Name: "ghcr.io/o/a"}},
			wb:     &WriteBack{Method: MethodGit, Target: Target{Kind: TargetArgoCDSource}, Repository: "git@github.com:org/config.git"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, errs := FromAnnotations(tt.in)
			if spec == nil {
				t.Fatalf("not managed; errors: %v", errs)
			}
			if diff := cmp.Diff(tt.images, factImages(spec)); diff != "" {
				t.Errorf("images (-AIU %s +crowsnest):\n%s\nerrors: %v", tt.source, diff, errs)
			}
			if tt.wb != nil {
				if diff := cmp.Diff(*tt.wb, spec.WriteBack); diff != "" {
					t.Errorf("write-back (-AIU %s +crowsnest):\n%s\nerrors: %v", tt.source, diff, errs)
				}
			}
			if diff := cmp.Diff(tt.wantErrs, errKeys(errs)); diff != "" {
				t.Errorf("reported keys (-want +got):\n%s\nerrors: %v", diff, errs)
			}
		})
	}
}

// AIU's default Helm parameter names (pkg/common/constants.go) are
// crowsnest's.
func TestAIUDefaultHelmParameterNames(t *testing.T) {
	got := []string{defaultHelmImageName, defaultHelmImageTag}
	if diff := cmp.Diff([]string{"image.name", "image.tag"}, got); diff != "" {
		t.Errorf("defaults (-AIU %s +crowsnest):\n%s", aiuConstantsGo, diff)
	}
}

// Every pull-secret form AIU documents parses to its source.
func TestAIUPullSecretForms(t *testing.T) {
	tests := []struct {
		in   string
		want config.CredentialRef
	}{
		{"pullsecret:argocd/regcred", config.CredentialRef{Source: "pullsecret", Namespace: "argocd", Name: "regcred"}},
		{"secret:argocd/creds#token", config.CredentialRef{Source: "secret", Namespace: "argocd", Name: "creds", Field: "token"}},
		{"env:REGISTRY_SECRET", config.CredentialRef{Source: "env", Env: "REGISTRY_SECRET"}},
		{"ext:/app/scripts/auth.sh", config.CredentialRef{Source: "ext", Path: "/app/scripts/auth.sh"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := config.ParseCredentials(tt.in)
			if err != nil {
				t.Fatalf("AIU (%s) accepts %q; crowsnest: %v", aiuImagesDoc, tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
