package gitplan

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

const (
	appsRepo   = "https://git.example.com/org/apps.git"
	valuesRepo = "https://git.example.com/org/values.git"
	chartRepo  = "https://charts.example.com"
	deployRepo = "https://git.example.com/org/deploy.git"
)

// web is the change of one image in source idx (-1: spec.source).
func web(idx int) imageupdate.Change {
	return imageupdate.Change{Alias: "web", Image: "ghcr.io/org/web", From: "1.0.0", To: "2.0.0", SourceIndex: idx}
}

var webImage = Image{Alias: "web", Name: "ghcr.io/org/web", NewTag: "2.0.0"}

// The Git writes of an Application's changes: which sources, repositories,
// paths and files, and what is written of each image.
func TestChanges(t *testing.T) {
	single := &watcher.App{Name: "web", Project: "team-a", Sources: []watcher.Source{{RepoURL: appsRepo, Path: "web", TargetRevision: "main"}}}
	twoGit := &watcher.App{Name: "web", Project: "team-a", MultiSource: true, Sources: []watcher.Source{
		{RepoURL: appsRepo, Path: "web", TargetRevision: "main"},
		{RepoURL: deployRepo, Path: "monitoring", TargetRevision: "release"},
	}}
	chartAndValues := &watcher.App{Name: "web", MultiSource: true, Sources: []watcher.Source{
		{RepoURL: chartRepo, Chart: "web", TargetRevision: "1.*"},
		{RepoURL: valuesRepo, TargetRevision: "prod", Ref: "values"},
	}}
	helmValues := func(path string) imageupdate.WriteBack {
		return imageupdate.WriteBack{Target: imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: path}}
	}
	tests := []struct {
		name    string
		app     *watcher.App
		wb      imageupdate.WriteBack
		images  []imageupdate.Image // the Spec's, for Helm names
		changes []imageupdate.Change
		want    []Change
		wantErr string
	}{
		{
			name:    "single source",
			app:     single,
			changes: []imageupdate.Change{web(-1)},
			want: []Change{{App: "web", Project: "team-a", RepoURL: appsRepo, Path: "web", Branch: "main",
				Target: imageupdate.Target{Kind: imageupdate.TargetArgoCDSource}, OwnSource: true, Images: []Image{webImage}}},
		},
		{
			name:    "no project is the default project",
			app:     &watcher.App{Name: "web", Sources: []watcher.Source{{RepoURL: appsRepo, Path: "web"}}},
			changes: []imageupdate.Change{web(-1)},
			want: []Change{{App: "web", Project: "default", RepoURL: appsRepo, Path: "web",
				Target: imageupdate.Target{Kind: imageupdate.TargetArgoCDSource}, OwnSource: true, Images: []Image{webImage}}},
		},
		{
			name: "multi-source: images in two sources, one change each, in order of first appearance",
			app:  twoGit,
			changes: []imageupdate.Change{
				{Alias: "exporter", Image: "ghcr.io/org/exporter", To: "0.5.0", SourceIndex: 1},
				web(0),
				{Alias: "sidecar", Image: "ghcr.io/org/sidecar", To: "3.1.0", SourceIndex: 1},
			},
			want: []Change{
				{App: "web", Project: "team-a", RepoURL: deployRepo, Path: "monitoring", Branch: "release",
					Target: imageupdate.Target{Kind: imageupdate.TargetArgoCDSource}, OwnSource: true, Images: []Image{
						{Alias: "exporter", Name: "ghcr.io/org/exporter", NewTag: "0.5.0"},
						{Alias: "sidecar", Name: "ghcr.io/org/sidecar", NewTag: "3.1.0"},
					}},
				{App: "web", Project: "team-a", RepoURL: appsRepo, Path: "web", Branch: "main",
					Target: imageupdate.Target{Kind: imageupdate.TargetArgoCDSource}, OwnSource: true, Images: []Image{webImage}},
			},
		},
		{
			name:    "spec.source of a multi-source Application is its first source",
			app:     twoGit,
			changes: []imageupdate.Change{web(-1)},
			want: []Change{{App: "web", Project: "team-a", RepoURL: appsRepo, Path: "web", Branch: "main",
				Target: imageupdate.Target{Kind: imageupdate.TargetArgoCDSource}, OwnSource: true, Images: []Image{webImage}}},
		},
		{
			name:    "no source to write to",
			app:     &watcher.App{Name: "web"},
			changes: []imageupdate.Change{web(-1)},
			wantErr: "git write-back: the Application has no source to write to",
		},
		{
			name:    "a source index past the sources",
			app:     single,
			changes: []imageupdate.Change{web(3)},
			wantErr: "git write-back: the Application has no source to write to",
		},
		{
			name:    "kustomization target",
			app:     single,
			wb:      imageupdate.WriteBack{Target: imageupdate.Target{Kind: imageupdate.TargetKustomization, Path: "overlays/prod"}},
			changes: []imageupdate.Change{{Alias: "web", Image: "ghcr.io/org/web", To: "2.0.0", SourceIndex: -1, Kustomize: "ghcr.io/org/web:2.0.0"}},
			want: []Change{{App: "web", Project: "team-a", RepoURL: appsRepo, Path: "web", Branch: "main",
				Target: imageupdate.Target{Kind: imageupdate.TargetKustomization, Path: "overlays/prod"}, OwnSource: true, Images: []Image{webImage}}},
		},
		{
			name:    "helmvalues target in the source",
			app:     single,
			wb:      helmValues("values-prod.yaml"),
			images:  []imageupdate.Image{{Alias: "web", Helm: imageupdate.HelmNames{ImageName: "web.image.repository", ImageTag: "web.image.tag"}}},
			changes: []imageupdate.Change{{Alias: "web", Image: "ghcr.io/org/web", To: "2.0.0", SourceIndex: -1, Helm: []watcher.HelmParameter{{Name: "web.image.tag", Value: "2.0.0"}}}},
			want: []Change{{App: "web", Project: "team-a", RepoURL: appsRepo, Path: "web", Branch: "main", Helm: true,
				Target: imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "values-prod.yaml"}, OwnSource: true,
				Images: []Image{{Alias: "web", Name: "ghcr.io/org/web", NewTag: "2.0.0", HelmImageName: "web.image.repository", HelmImageTag: "web.image.tag"}}}},
		},
		{
			name:    "argocd-source target takes no path",
			app:     single,
			wb:      imageupdate.WriteBack{Target: imageupdate.Target{Kind: imageupdate.TargetArgoCDSource, Path: "ignored"}},
			images:  []imageupdate.Image{{Alias: "web", Helm: imageupdate.HelmNames{ImageSpec: "image"}}},
			changes: []imageupdate.Change{{Alias: "web", Image: "ghcr.io/org/web", To: "2.0.0", SourceIndex: -1, Helm: []watcher.HelmParameter{{Name: "image", Value: "ghcr.io/org/web:2.0.0"}}}},
			want: []Change{{App: "web", Project: "team-a", RepoURL: appsRepo, Path: "web", Branch: "main", Helm: true,
				Target: imageupdate.Target{Kind: imageupdate.TargetArgoCDSource}, OwnSource: true,
				Images: []Image{{Alias: "web", Name: "ghcr.io/org/web", NewTag: "2.0.0", HelmImageSpec: "image"}}}},
		},
		{
			name: "$ref/ helmvalues path names the file in the ref source",
			app:  chartAndValues,
			wb:   helmValues("$values/team-a/prod.yaml"),
			changes: []imageupdate.Change{
				{Alias: "web", Image: "ghcr.io/org/web", To: "2.0.0", SourceIndex: 0, Helm: []watcher.HelmParameter{{Name: "image.tag", Value: "2.0.0"}}},
			},
			want: []Change{{App: "web", Project: "default", RepoURL: valuesRepo, Path: "", Branch: "prod", Helm: true,
				Target: imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "/team-a/prod.yaml"}, Images: []Image{webImage}}},
		},
		{
			name: "$ref/ to the source's own ref",
			app: &watcher.App{Name: "web", Sources: []watcher.Source{
				{RepoURL: appsRepo, Path: "web", TargetRevision: "main", Ref: "self"}}},
			wb:      helmValues("$self/envs/prod.yaml"),
			changes: []imageupdate.Change{web(-1)},
			want: []Change{{App: "web", Project: "default", RepoURL: appsRepo, Path: "", Branch: "main",
				Target: imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "/envs/prod.yaml"}, OwnSource: true, Images: []Image{webImage}}},
		},
		{
			name:    "$ref/ naming no source's ref",
			app:     chartAndValues,
			wb:      helmValues("$vals/team-a/prod.yaml"),
			changes: []imageupdate.Change{web(0)},
			wantErr: `git write-back: write-back-target helmvalues:$vals/team-a/prod.yaml: no source has ref "vals"`,
		},
		{
			name:    "$ref without a file",
			app:     chartAndValues,
			wb:      helmValues("$values"),
			changes: []imageupdate.Change{web(0)},
			wantErr: "git write-back: write-back-target helmvalues:$values: want $values/<path to the values file>",
		},
		{
			name:    "a chart from a Helm repository without $ref/ or git-repository",
			app:     chartAndValues,
			wb:      helmValues("values.yaml"),
			changes: []imageupdate.Change{web(0)},
			wantErr: `git write-back: source https://charts.example.com is chart "web" from a Helm repository, not Git; ` +
				"name the values file with write-back-target helmvalues:$<ref>/<path> or set git-repository",
		},
		{
			name: "git-repository names the repository of a chart's values",
			app:  chartAndValues,
			wb: imageupdate.WriteBack{Repository: deployRepo, Branch: "main",
				Target: imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "/web/values.yaml"}},
			changes: []imageupdate.Change{web(0)},
			want: []Change{{App: "web", Project: "default", RepoURL: deployRepo, Branch: "main",
				Target: imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "/web/values.yaml"}, OwnSource: true, Images: []Image{webImage}}},
		},
		{
			name: "git-repository wins over a $ref source's repository",
			app:  chartAndValues,
			wb: imageupdate.WriteBack{Repository: deployRepo,
				Target: imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "$values/web.yaml"}},
			changes: []imageupdate.Change{web(0)},
			want: []Change{{App: "web", Project: "default", RepoURL: deployRepo, Branch: "prod",
				Target: imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "/web.yaml"}, Images: []Image{webImage}}},
		},
		{
			name: "a kustomize name other than the image writes newName",
			app:  single,
			wb:   imageupdate.WriteBack{Target: imageupdate.Target{Kind: imageupdate.TargetKustomization}},
			changes: []imageupdate.Change{
				{Alias: "front", Image: "ghcr.io/org/storefront", KustomizeName: "storefront", To: "1.1.0", SourceIndex: -1},
				{Alias: "web", Image: "ghcr.io/org/web", KustomizeName: "ghcr.io/org/web", To: "2.0.0", SourceIndex: -1},
			},
			want: []Change{{App: "web", Project: "team-a", RepoURL: appsRepo, Path: "web", Branch: "main",
				Target: imageupdate.Target{Kind: imageupdate.TargetKustomization}, OwnSource: true, Images: []Image{
					{Alias: "front", Name: "ghcr.io/org/storefront", KustomizeName: "storefront", NewName: "ghcr.io/org/storefront", NewTag: "1.1.0"},
					webImage,
				}}},
		},
		{
			name:    "a pinned digest: the tag without it, and the digest",
			app:     single,
			changes: []imageupdate.Change{{Alias: "web", Image: "ghcr.io/org/web", To: "2.0.0@sha256:0123", Digest: "sha256:0123", SourceIndex: -1}},
			want: []Change{{App: "web", Project: "team-a", RepoURL: appsRepo, Path: "web", Branch: "main",
				Target: imageupdate.Target{Kind: imageupdate.TargetArgoCDSource}, OwnSource: true,
				Images: []Image{{Alias: "web", Name: "ghcr.io/org/web", NewTag: "2.0.0", Digest: "sha256:0123"}}}},
		},
		{
			name:    "no changes, no writes",
			app:     single,
			changes: nil,
			want:    []Change{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.wb.Method = imageupdate.MethodGit
			spec := &imageupdate.Spec{Images: tt.images, WriteBack: tt.wb}
			got, err := Changes(tt.app, spec, tt.changes)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Changes (-want +got):\n%s", diff)
			}
		})
	}
}

// The branch a write goes to: the git-branch annotation's, else the
// written source's targetRevision when Git could push to it; a write
// branch makes it "base:target". A revision that is no branch fails the
// change, naming its field.
func TestChangesBranch(t *testing.T) {
	single := func(rev string) *watcher.App {
		return &watcher.App{Name: "web", Sources: []watcher.Source{{RepoURL: appsRepo, Path: "web", TargetRevision: rev}}}
	}
	multi := &watcher.App{Name: "web", MultiSource: true, Sources: []watcher.Source{
		{RepoURL: chartRepo, Chart: "web", TargetRevision: "1.*", Helm: &watcher.HelmSource{ValueFiles: []string{"$values/web.yaml"}}},
		{RepoURL: appsRepo, Path: "web", TargetRevision: "release..1"},
		{RepoURL: valuesRepo, TargetRevision: "v1 rc", Ref: "values"},
		{RepoURL: valuesRepo, TargetRevision: "prod", Ref: "prod"},
	}}
	tests := []struct {
		name    string
		app     *watcher.App
		wb      imageupdate.WriteBack
		idx     int
		want    string
		wantErr string
	}{
		{name: "the source's revision", app: single("main"), want: "main"},
		{name: "no revision: the default branch", app: single(""), want: ""},
		{name: "HEAD: the default branch", app: single("HEAD"), want: ""},
		{name: "the annotation's branch over the revision", app: single("1.*"), wb: imageupdate.WriteBack{Branch: "main"}, want: "main"},
		{name: "base:target on the revision", app: single("release"), wb: imageupdate.WriteBack{PushBranch: "upd-{{.SHA256}}"}, want: "release:upd-{{.SHA256}}"},
		{name: "base:target on the annotation's branch", app: single("release"),
			wb: imageupdate.WriteBack{Branch: "main", PushBranch: "crowsnest/{{.AppName}}"}, want: "main:crowsnest/{{.AppName}}"},
		{name: "base:target without a revision is on HEAD", app: single(""), wb: imageupdate.WriteBack{PushBranch: "upd-{{.SHA256}}"}, want: "HEAD:upd-{{.SHA256}}"},
		{name: "a Helm range is no branch", app: single("1.*"),
			wantErr: `git write-back: spec.source.targetRevision: invalid branch name "1.*": contains '*'; name the branch to write to with the git-branch annotation`},
		{name: "multi-source: the field of the written source", app: multi, idx: 1,
			wantErr: `git write-back: spec.sources[1].targetRevision: invalid branch name "release..1": contains ".."; name the branch to write to with the git-branch annotation`},
		{name: "$ref/: the ref source's revision", app: multi, idx: 0,
			wb: imageupdate.WriteBack{Target: imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "$prod/web.yaml"}}, want: "prod"},
		{name: "$ref/: the field of the ref source", app: multi, idx: 0,
			wb:      imageupdate.WriteBack{Target: imageupdate.Target{Kind: imageupdate.TargetHelmValues, Path: "$values/web.yaml"}},
			wantErr: `git write-back: spec.sources[2].targetRevision: invalid branch name "v1 rc": contains ' '; name the branch to write to with the git-branch annotation`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.wb.Method = imageupdate.MethodGit
			spec := &imageupdate.Spec{WriteBack: tt.wb}
			chs, err := Changes(tt.app, spec, []imageupdate.Change{web(tt.idx)})
			got, gotErr := "", ""
			if err != nil {
				gotErr = err.Error()
			} else {
				got = chs[0].Branch
			}
			if diff := cmp.Diff(tt.want+"|"+tt.wantErr, got+"|"+gotErr); diff != "" {
				t.Errorf("branch|error (-want +got):\n%s", diff)
			}
		})
	}
}

// The field a revision error names: spec.sources[i] in a multi-source
// Application, else spec.source (one source, or a source the Application
// does not hold).
func TestRevisionField(t *testing.T) {
	src := []watcher.Source{{RepoURL: appsRepo}, {RepoURL: valuesRepo}}
	single := &watcher.App{Sources: src[:1]}
	multi := &watcher.App{MultiSource: true, Sources: src}
	tests := []struct {
		name string
		app  *watcher.App
		src  *watcher.Source
		want string
	}{
		{name: "single source", app: single, src: &single.Sources[0], want: "spec.source.targetRevision"},
		{name: "multi-source, first", app: multi, src: &multi.Sources[0], want: "spec.sources[0].targetRevision"},
		{name: "multi-source, second", app: multi, src: &multi.Sources[1], want: "spec.sources[1].targetRevision"},
		{name: "not the Application's", app: multi, src: &watcher.Source{RepoURL: appsRepo}, want: "spec.source.targetRevision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, revisionField(tt.app, tt.src)); diff != "" {
				t.Errorf("revisionField (-want +got):\n%s", diff)
			}
		})
	}
}

// A pull request's head: one per repository, base, project and
// credentials, never per Application or per change.
func TestPullRequestHead(t *testing.T) {
	app := func(name, project string) *watcher.App {
		return &watcher.App{Name: name, Project: project, Sources: []watcher.Source{{RepoURL: appsRepo, Path: name, TargetRevision: "main"}}}
	}
	headOf := func(t *testing.T, a *watcher.App, wb imageupdate.WriteBack, c imageupdate.Change) string {
		t.Helper()
		wb.Method = imageupdate.MethodGit
		got, err := Changes(a, &imageupdate.Spec{WriteBack: wb}, []imageupdate.Change{c})
		if err != nil || len(got) != 1 || got[0].PullRequest == nil {
			t.Fatalf("Changes = %+v, %v; want one change with a pull request", got, err)
		}
		return got[0].PullRequest.Head
	}
	pr := imageupdate.WriteBack{PullRequest: &imageupdate.PullRequest{Labels: []string{"deps"}}}
	newer := web(-1)
	newer.To = "3.0.0"

	web1 := headOf(t, app("web", "team-a"), pr, web(-1))
	if web1 != "crowsnest/team-a/main" {
		t.Errorf("head = %q, want crowsnest/team-a/main", web1)
	}
	for name, h := range map[string]string{
		"another Application of the project": headOf(t, app("api", "team-a"), pr, web(-1)),
		"a newer tag":                        headOf(t, app("web", "team-a"), pr, newer),
	} {
		if h != web1 {
			t.Errorf("%s: head %q, want the same %q (one pull request, kept current)", name, h, web1)
		}
	}
	secret := pr
	secret.GitCredentials = "secret:team-a/bot"
	tokenURL := app("web", "team-a")
	tokenURL.Sources[0].RepoURL = strings.Replace(appsRepo, "://", "://bot:token@", 1)
	for name, h := range map[string]string{
		"another project":        headOf(t, app("web", "team-b"), pr, web(-1)),
		"another credentials":    headOf(t, app("web", "team-a"), secret, web(-1)),
		"credentials in the URL": headOf(t, tokenURL, pr, web(-1)),
	} {
		if h == web1 {
			t.Errorf("%s: head %q is the team-a one's: one tenant's change would ride on another's branch", name, h)
		}
	}
	aiu := imageupdate.WriteBack{PullRequest: &imageupdate.PullRequest{ImageUpdaterHead: true}}
	if h := headOf(t, app("web", "team-a"), aiu, web(-1)); !regexp.MustCompile(`^image-updater-[0-9a-f]{8}$`).MatchString(h) ||
		h != headOf(t, app("api", "team-a"), aiu, newer) || h == headOf(t, app("web", "team-b"), aiu, web(-1)) {
		t.Errorf("ImageUpdater head %q: want image-updater-<8 hex>, the same for the project's Applications and tags, another for another project", h)
	}
	if _, err := Changes(app("web", "team-a"), &imageupdate.Spec{WriteBack: imageupdate.WriteBack{Method: imageupdate.MethodGit,
		PushBranch: "upd", PullRequest: &imageupdate.PullRequest{}}}, []imageupdate.Change{web(-1)}); err == nil {
		t.Error("a pull request with base:target was planned")
	}
}

// An image's source revision and repository are written for a pull
// request only: nothing shows them on a push.
func TestImageSourceOnlyForPullRequests(t *testing.T) {
	app := &watcher.App{Name: "web", Sources: []watcher.Source{{RepoURL: appsRepo, Path: "web", TargetRevision: "main"}}}
	c := web(-1)
	c.Revision, c.Source, c.Described = "0f1e2d3c", "https://github.com/org/web", true
	for _, tt := range []struct {
		name string
		pr   *imageupdate.PullRequest
		want Image
	}{
		{name: "push", want: webImage},
		{name: "pull request", pr: &imageupdate.PullRequest{}, want: Image{Alias: "web", Name: "ghcr.io/org/web", NewTag: "2.0.0",
			Revision: "0f1e2d3c", Source: "https://github.com/org/web"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Changes(app, &imageupdate.Spec{WriteBack: imageupdate.WriteBack{Method: imageupdate.MethodGit, PullRequest: tt.pr}}, []imageupdate.Change{c})
			if err != nil || len(got) != 1 {
				t.Fatalf("Changes = %+v, %v; want one change", got, err)
			}
			if diff := cmp.Diff([]Image{tt.want}, got[0].Images); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
		})
	}
}
