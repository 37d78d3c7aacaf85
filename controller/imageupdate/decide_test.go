package imageupdate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

func mustSpec(t *testing.T, kv ...string) *Spec {
	t.Helper()
	spec, errs := FromAnnotations(ann(kv...))
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	return spec
}

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDecide(t *testing.T) {
	kustomizeApp := func(images []string, overrides ...string) *watcher.App {
		src := watcher.Source{RepoURL: "https://git.example.com/a.git", Path: "app"}
		if overrides != nil {
			src.Kustomize = &watcher.KustomizeSource{Images: overrides}
		}
		return &watcher.App{Name: "a", Namespace: "argocd", Sources: []watcher.Source{src}, Images: images}
	}
	helmApp := &watcher.App{Name: "h", Sources: []watcher.Source{{RepoURL: "https://charts.example.com", Chart: "web",
		Helm: &watcher.HelmSource{Parameters: []watcher.HelmParameter{{Name: "replicas", Value: "2"}}}}},
		Images: []string{"ghcr.io/org/web:1.0.0"}}
	multi := &watcher.App{Name: "m", MultiSource: true, Sources: []watcher.Source{
		{RepoURL: "https://git.example.com/values.git", Ref: "values"},
		{RepoURL: "https://charts.example.com", Chart: "web", Helm: &watcher.HelmSource{ValueFiles: []string{"$values/web.yaml"}}},
	}, Images: []string{"ghcr.io/org/web:1.0.0"}}
	sel := func(tag string) map[string]Selection {
		return map[string]Selection{"nginx": {Result: policy.Result{Tag: tag}}, "web": {Result: policy.Result{Tag: tag}}}
	}

	tests := []struct {
		name    string
		app     *watcher.App
		spec    *Spec
		results map[string]Selection
		hold    Hold
		want    Plan
	}{
		{
			name: "newer tag for a running kustomize image",
			app:  kustomizeApp([]string{"nginx:1.0.0"}), spec: mustSpec(t, "image-list", "nginx"), results: sel("1.1.0"),
			want: Plan{Changes: []Change{{Alias: "nginx", Image: "nginx", From: "1.0.0", To: "1.1.0", SourceIndex: -1, Kustomize: "nginx:1.1.0", KustomizeName: "nginx"}}},
		},
		{
			name: "status written in Docker Hub's long form still matches",
			app:  kustomizeApp([]string{"docker.io/library/nginx:1.0.0"}), spec: mustSpec(t, "image-list", "nginx"), results: sel("1.1.0"),
			want: Plan{Changes: []Change{{Alias: "nginx", Image: "nginx", From: "1.0.0", To: "1.1.0", SourceIndex: -1, Kustomize: "nginx:1.1.0", KustomizeName: "nginx"}}},
		},
		{
			name: "already up to date: nothing to write",
			app:  kustomizeApp([]string{"nginx:1.1.0"}), spec: mustSpec(t, "image-list", "nginx"), results: sel("1.1.0"),
			want: Plan{Skipped: []Skip{{Alias: "nginx", Reason: ReasonUpToDate, Detail: "1.1.0"}}},
		},
		{
			name: "an override in the spec wins over the running image",
			app:  kustomizeApp([]string{"nginx:1.0.0"}, "nginx:1.1.0"), spec: mustSpec(t, "image-list", "nginx"), results: sel("1.1.0"),
			want: Plan{Skipped: []Skip{{Alias: "nginx", Reason: ReasonUpToDate, Detail: "1.1.0"}}},
		},
		{
			// argocd-image-updater's ContainsImage looks for the kustomize
			// name first, and its needsUpdate wants an override while the
			// names differ, even at the same tag.
			name: "a kustomize name the live image still carries: that image is replaced, even at the same tag",
			app:  kustomizeApp([]string{"nginx:1.1.0"}), results: sel("1.1.0"),
			spec: mustSpec(t, "image-list", "web=ghcr.io/org/web", "web.kustomize.image-name", "nginx"),
			want: Plan{Changes: []Change{{Alias: "web", Image: "ghcr.io/org/web", From: "1.1.0", To: "1.1.0", SourceIndex: -1,
				Kustomize: "nginx=ghcr.io/org/web:1.1.0", KustomizeName: "nginx"}}},
		},
		{
			name: "a kustomize name whose override is in the spec: up to date",
			app:  kustomizeApp([]string{"nginx:1.1.0"}, "nginx=ghcr.io/org/web:1.1.0"), results: sel("1.1.0"),
			spec: mustSpec(t, "image-list", "web=ghcr.io/org/web", "web.kustomize.image-name", "nginx"),
			want: Plan{Skipped: []Skip{{Alias: "web", Reason: ReasonUpToDate, Detail: "1.1.0"}}},
		},
		{
			name: "not deployed is left alone",
			app:  kustomizeApp([]string{"redis:7"}), spec: mustSpec(t, "image-list", "nginx"), results: sel("1.1.0"),
			want: Plan{Skipped: []Skip{{Alias: "nginx", Reason: ReasonNotDeployed,
				Detail: "the image is neither in status.summary.images nor set in the spec (force-update not set)"}}},
		},
		{
			name: "force-update writes an image that is not deployed",
			app:  kustomizeApp(nil), spec: mustSpec(t, "image-list", "nginx", "force-update", "true"), results: sel("1.1.0"),
			want: Plan{Changes: []Change{{Alias: "nginx", Image: "nginx", To: "1.1.0", SourceIndex: -1, Kustomize: "nginx:1.1.0", KustomizeName: "nginx"}}},
		},
		{
			name: "a kustomize name that differs from the image",
			app:  kustomizeApp([]string{"nginx:1.0.0"}), spec: mustSpec(t, "image-list", "web=nginx", "web.kustomize.image-name", "base/nginx"),
			results: map[string]Selection{"web": {Result: policy.Result{Tag: "1.1.0"}}},
			want:    Plan{Changes: []Change{{Alias: "web", Image: "nginx", From: "1.0.0", To: "1.1.0", SourceIndex: -1, Kustomize: "base/nginx=nginx:1.1.0", KustomizeName: "base/nginx"}}},
		},
		{
			name: "a digest-pinned result",
			app:  kustomizeApp([]string{"nginx:stable"}), spec: mustSpec(t, "image-list", "nginx:stable", "update-strategy", "digest"),
			results: map[string]Selection{"nginx": {Result: policy.Result{Tag: "stable", Digest: digest, Pinned: true,
				Revision: "v1.27.0", Source: "https://github.com/nginx/nginx"}}},
			want: Plan{Changes: []Change{{Alias: "nginx", Image: "nginx", From: "stable", To: "stable@" + digest, Digest: digest, SourceIndex: -1,
				Kustomize: "nginx:stable@" + digest, KustomizeName: "nginx",
				Revision: "v1.27.0", Source: "https://github.com/nginx/nginx", Described: true}}},
		},
		{
			name: "the same digest is up to date",
			app:  kustomizeApp([]string{"nginx:stable@" + digest}), spec: mustSpec(t, "image-list", "nginx:stable", "update-strategy", "digest"),
			results: map[string]Selection{"nginx": {Result: policy.Result{Tag: "stable", Digest: digest, Pinned: true}}},
			want:    Plan{Skipped: []Skip{{Alias: "nginx", Reason: ReasonUpToDate, Detail: "stable@" + digest}}},
		},
		{
			name: "a Helm chart with default parameter names",
			app:  helmApp, spec: mustSpec(t, "image-list", "web=ghcr.io/org/web"), results: sel("1.2.0"),
			want: Plan{Changes: []Change{{Alias: "web", Image: "ghcr.io/org/web", From: "1.0.0", To: "1.2.0", SourceIndex: -1,
				Helm: []watcher.HelmParameter{{Name: "image.name", Value: "ghcr.io/org/web", ForceString: true}, {Name: "image.tag", Value: "1.2.0", ForceString: true}}}}},
		},
		{
			name: "a Helm image-spec parameter",
			app:  helmApp, spec: mustSpec(t, "image-list", "web=ghcr.io/org/web", "web.helm.image-spec", "web.image"), results: sel("1.2.0"),
			want: Plan{Changes: []Change{{Alias: "web", Image: "ghcr.io/org/web", From: "1.0.0", To: "1.2.0", SourceIndex: -1,
				Helm: []watcher.HelmParameter{{Name: "web.image", Value: "ghcr.io/org/web:1.2.0", ForceString: true}}}}},
		},
		{
			name: "multi-source: the chart source gets the parameters, not the $values ref",
			app:  multi, spec: mustSpec(t, "image-list", "web=ghcr.io/org/web", "web.helm.image-tag", "image.tag"), results: sel("1.2.0"),
			want: Plan{Changes: []Change{{Alias: "web", Image: "ghcr.io/org/web", From: "1.0.0", To: "1.2.0", SourceIndex: 1,
				Helm: []watcher.HelmParameter{{Name: "image.tag", Value: "1.2.0", ForceString: true}}}}},
		},
		{
			name: "a window holds the write-back: the change is pending",
			app:  kustomizeApp([]string{"nginx:1.0.0"}), spec: mustSpec(t, "image-list", "nginx"), results: sel("1.1.0"),
			hold: Hold{Held: true, Reason: "weekend freeze"},
			want: Plan{Held: true, HoldReason: "weekend freeze",
				Changes: []Change{{Alias: "nginx", Image: "nginx", From: "1.0.0", To: "1.1.0", SourceIndex: -1, Kustomize: "nginx:1.1.0", KustomizeName: "nginx"}}},
		},
		{
			name: "a hold with nothing to write is no hold",
			app:  kustomizeApp([]string{"nginx:1.1.0"}), spec: mustSpec(t, "image-list", "nginx"), results: sel("1.1.0"),
			hold: Hold{Held: true, Reason: "weekend freeze"},
			want: Plan{Skipped: []Skip{{Alias: "nginx", Reason: ReasonUpToDate, Detail: "1.1.0"}}},
		},
		{
			name: "selection failed and missing results are skips",
			app:  kustomizeApp([]string{"nginx:1.0.0", "redis:7"}), spec: mustSpec(t, "image-list", "nginx, redis"),
			results: map[string]Selection{"nginx": {Err: policy.ErrNoCandidate}},
			want: Plan{Skipped: []Skip{{Alias: "nginx", Reason: ReasonNoCandidate, Detail: policy.ErrNoCandidate.Error()},
				{Alias: "redis", Reason: ReasonNoResult}}},
		},
		{
			name: "a failed selection is a failure",
			app:  kustomizeApp([]string{"nginx:1.0.0"}), spec: mustSpec(t, "image-list", "nginx"),
			results: map[string]Selection{"nginx": {Err: errors.New("registry unreachable")}},
			want:    Plan{Skipped: []Skip{{Alias: "nginx", Reason: ReasonSelectionFailed, Detail: "registry unreachable"}}},
		},
		{
			name: "a broken write-back writes nothing",
			app:  kustomizeApp([]string{"nginx:1.0.0"}), spec: &Spec{Images: mustSpec(t, "image-list", "nginx").Images}, results: sel("1.1.0"),
			want: Plan{Skipped: []Skip{{Alias: "nginx", Reason: ReasonNoWriteBack, Detail: "the write-back annotations are invalid"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.app, tt.spec, tt.results, tt.hold)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// A source Argo CD renders as a plain directory takes no image overrides:
// the image is left alone with a reason naming the tool, whatever the
// annotations ask, unless the write-back target is a kustomization in Git.
func TestDecideLeavesDirectorySourcesAlone(t *testing.T) {
	src := watcher.Source{RepoURL: "https://git.example.com/a.git", Path: "web"}
	single := func(typ string) *watcher.App {
		return &watcher.App{Name: "a", Sources: []watcher.Source{src}, SourceType: typ, Images: []string{"ghcr.io/org/web:1.0.0"}}
	}
	multi := &watcher.App{Name: "m", MultiSource: true, Sources: []watcher.Source{src},
		SourceTypes: []string{"Directory"}, Images: []string{"ghcr.io/org/web:1.0.0"}}
	tests := []struct {
		name       string
		app        *watcher.App
		kv         []string
		wantChange bool
	}{
		{"Directory", single("Directory"), nil, false},
		{"multi-source Directory", multi, nil, false},
		{"Directory with helm names", single("Directory"), []string{"web.helm.image-name", "img.name", "web.helm.image-tag", "img.tag"}, false},
		{"Directory in Git", single("Directory"), []string{"write-back-method", "git"}, false},
		{"Directory, kustomization target", single("Directory"), []string{"write-back-method", "git", "write-back-target", "kustomization"}, true},
		{"Kustomize", single("Kustomize"), nil, true},
		{"Plugin (unchanged: kustomize images)", single("Plugin"), nil, true},
		{"not yet rendered", single(""), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := mustSpec(t, append([]string{"image-list", "web=ghcr.io/org/web"}, tt.kv...)...)
			p := Decide(tt.app, spec, map[string]Selection{"web": {Result: policy.Result{Tag: "1.1.0"}}}, Hold{})
			if tt.wantChange {
				if len(p.Changes) != 1 {
					t.Fatalf("changes %+v, skipped %+v; want one change", p.Changes, p.Skipped)
				}
				return
			}
			if len(p.Changes) != 0 || len(p.Skipped) != 1 || p.Skipped[0].Reason != ReasonUnsupportedSource {
				t.Fatalf("changes %+v, skipped %+v; want web skipped as %s", p.Changes, p.Skipped, ReasonUnsupportedSource)
			}
			if !strings.Contains(p.Skipped[0].Detail, "renders the source as Directory") {
				t.Errorf("detail %q does not name Directory", p.Skipped[0].Detail)
			}
		})
	}
}

// With no helm or kustomize block in the spec, the tool Argo CD found
// (status.sourceType, sourceTypes per source) decides the overrides, as in
// argocd-image-updater; the kustomization target always means kustomize.
func TestDecideToolFromArgoCDSourceType(t *testing.T) {
	src := watcher.Source{RepoURL: "https://git.example.com/a.git", Path: "web"}
	single := func(typ string) *watcher.App {
		return &watcher.App{Name: "a", Sources: []watcher.Source{src}, SourceType: typ, Images: []string{"ghcr.io/org/web:1.0.0"}}
	}
	multi := &watcher.App{Name: "m", MultiSource: true, Sources: []watcher.Source{src, {RepoURL: src.RepoURL, Ref: "values"}},
		SourceTypes: []string{"Helm", "Directory"}, Images: []string{"ghcr.io/org/web:1.0.0"}}
	tests := []struct {
		name     string
		app      *watcher.App
		kv       []string
		wantHelm bool
	}{
		{"Helm", single("Helm"), nil, true},
		{"Kustomize", single("Kustomize"), nil, false},
		{"not yet rendered", single(""), nil, false},
		{"multi-source Helm", multi, nil, true},
		{"kustomization target", single("Helm"), []string{"write-back-method", "git", "write-back-target", "kustomization"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := mustSpec(t, append([]string{"image-list", "web=ghcr.io/org/web"}, tt.kv...)...)
			p := Decide(tt.app, spec, map[string]Selection{"web": {Result: policy.Result{Tag: "1.1.0"}}}, Hold{})
			if len(p.Changes) != 1 {
				t.Fatalf("changes %+v, skipped %+v", p.Changes, p.Skipped)
			}
			ch := p.Changes[0]
			if got := len(ch.Helm) > 0; got != tt.wantHelm || got == (ch.Kustomize != "") {
				t.Errorf("helm %v, kustomize %q; want helm %v", ch.Helm, ch.Kustomize, tt.wantHelm)
			}
		})
	}
}
