package imageupdate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// localDefault is a registries config whose default registry is
// registry.local:5000 with Docker Hub's "library" namespace.
var localDefault = config.RegistryList{
	{Prefix: "docker.io", DefaultNamespace: "library"},
	{Prefix: "registry.local:5000", DefaultNamespace: "library", Default: true},
}

func TestQualifyRepositories(t *testing.T) {
	tests := []struct {
		name  string
		names func(string) string
		list  string
		want  map[string]string // alias -> repository looked up
	}{
		{name: "no registries config reads Docker Hub", list: "a=nginx,b=team/app,c=ghcr.io/org/app",
			want: map[string]string{"a": "docker.io/library/nginx", "b": "docker.io/team/app", "c": "ghcr.io/org/app"}},
		{name: "docker hub's own entry keeps today's reading", names: config.RegistryList{localDefault[0]}.Qualify,
			list: "a=nginx,b=team/app", want: map[string]string{"a": "docker.io/library/nginx", "b": "docker.io/team/app"}},
		{name: "the default registry takes names without a host", names: localDefault.Qualify,
			list: "a=nginx,b=team/app,c=ghcr.io/org/app,d=docker.io/nginx",
			want: map[string]string{"a": "registry.local:5000/library/nginx", "b": "registry.local:5000/team/app",
				"c": "ghcr.io/org/app", "d": "docker.io/library/nginx"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := mustSpec(t, "image-list", tt.list)
			if errs := spec.Qualify(tt.names); len(errs) > 0 {
				t.Fatal(errors.Join(errs...))
			}
			written := map[string]string{}
			for e := range strings.SplitSeq(tt.list, ",") {
				alias, name, _ := strings.Cut(e, "=")
				written[alias] = name
			}
			got := map[string]string{}
			for _, img := range spec.Images {
				got[img.Alias] = img.Ref.Repo()
				if img.Name != written[img.Alias] {
					t.Errorf("%s: Name = %q, want it as written, %q", img.Alias, img.Name, written[img.Alias])
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("repositories (-want +got):\n%s", diff)
			}
		})
	}
}

// With a default registry, "nginx" in the annotation and "nginx:1.0.0" in
// the Application's status are the default registry's image: the update
// is decided and written back as the user wrote the name. Without
// qualifying the running image too, it would look not deployed.
func TestDecideWithDefaultRegistry(t *testing.T) {
	app := &watcher.App{Name: "a", Sources: []watcher.Source{{RepoURL: "https://git.example.com/a.git", Path: "app"}},
		Images: []string{"nginx:1.0.0"}}
	results := map[string]Selection{"nginx": {Result: policy.Result{Tag: "1.1.0"}}}

	spec := mustSpec(t, "image-list", "nginx")
	if errs := spec.Qualify(localDefault.Qualify); len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	want := Plan{Changes: []Change{{Alias: "nginx", Image: "nginx", From: "1.0.0", To: "1.1.0", SourceIndex: -1,
		Kustomize: "nginx:1.1.0", KustomizeName: "nginx"}}}
	if diff := cmp.Diff(want, Decide(app, spec, results, Hold{})); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}

	// The same Application running Docker Hub's nginx explicitly runs
	// another image.
	app.Images = []string{"docker.io/library/nginx:1.0.0"}
	got := Decide(app, spec, results, Hold{})
	if len(got.Changes) != 0 || len(got.Skipped) != 1 || got.Skipped[0].Reason != ReasonNotDeployed {
		t.Errorf("plan = %+v, want nginx skipped as not deployed", got)
	}
}

func TestQualifyPolicies(t *testing.T) {
	ps, err := CompilePolicies([]config.ImagePolicy{{Name: "all", Images: []config.PolicyImage{{Image: "nginx", Constraint: "~1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := ps.Match(&watcher.App{Name: "a"})
	if errs := spec.Qualify(localDefault.Qualify); len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	if got := spec.Images[0].Ref.Repo(); got != "registry.local:5000/library/nginx" {
		t.Errorf("policy image repository = %q, want registry.local:5000/library/nginx", got)
	}
	again, _ := ps.Match(&watcher.App{Name: "b"})
	if got := again.Images[0].Ref.Repo(); got != "docker.io/library/nginx" {
		t.Errorf("the compiled policy changed: next match reads %q", got)
	}
}

// A name valid as written but too long once completed is dropped with an
// error naming the annotation; the other images stay.
func TestQualifyReportsInvalidNames(t *testing.T) {
	long := "team/" + strings.Repeat("a", 246) // 251 of the 255 a repository path may have
	spec := mustSpec(t, "image-list", "long="+long+",ok=nginx")
	mirror := config.RegistryList{{Prefix: "harbor.local/mirror/hub", Default: true}}
	errs := spec.Qualify(mirror.Qualify)
	var ae *AnnotationError
	if len(errs) != 1 || !errors.As(errs[0], &ae) || ae.Key != Prefix+KeyImageList || !strings.Contains(ae.Msg, "registries config") {
		t.Fatalf("errors = %v, want one for %s", errs, Prefix+KeyImageList)
	}
	if len(spec.Images) != 1 || spec.Images[0].Alias != "ok" {
		t.Errorf("images = %+v, want only ok", spec.Images)
	}
}
