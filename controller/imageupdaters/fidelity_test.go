package imageupdaters

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/triggers"
)

// problemPaths returns the FieldError paths among errs, and their messages.
func problemPaths(errs []error) ([]string, string) {
	var paths, msgs []string
	for _, err := range errs {
		var fe *FieldError
		if errors.As(err, &fe) {
			paths = append(paths, fe.Path)
		}
		msgs = append(msgs, err.Error())
	}
	return paths, strings.Join(msgs, "\n")
}

// What an ImageUpdater says that the annotations' text form cannot carry
// is read as argocd-image-updater reads it: a constraint is the whole text
// after the tag separator (NewFromIdentifier), an ignoreTags entry is one
// pattern even with a ',' in it, and an unknown updateStrategy is semver
// with a warning (ParseUpdateStrategy), as in the annotations.
func TestImageUpdaterSaysWhatAnnotationsCannot(t *testing.T) {
	s := newSet(t, `
kind: ImageUpdater
metadata: {name: shop, namespace: team-a}
spec:
  commonUpdateSettings: {updateStrategy: newest}
  applicationRefs:
  - namePattern: shop
    images:
    - {alias: range, imageName: "ghcr.io/acme/range:>=1.0.3 <1.0.8", commonUpdateSettings: {updateStrategy: semver}}
    - {alias: comma, imageName: "ghcr.io/acme/comma:>=1.0, <2.0", commonUpdateSettings: {updateStrategy: semver}}
    - {alias: or, imageName: "ghcr.io/acme/or:1.0.4 || 1.0.6", commonUpdateSettings: {updateStrategy: SemVer}}
    - {alias: ign, imageName: "ghcr.io/acme/ign", commonUpdateSettings: {ignoreTags: ["regexp:^v[0-9]{1,3}$", "latest"]}}
    - {alias: match, imageName: "ghcr.io/acme/match", commonUpdateSettings: {updateStrategy: semver, allowTags: "Regexp:^1\\."}}
    - {alias: badre, imageName: "ghcr.io/acme/badre", commonUpdateSettings: {updateStrategy: semver, allowTags: "regexp:(("}}
    - {alias: badfn, imageName: "ghcr.io/acme/badfn", commonUpdateSettings: {updateStrategy: semver, allowTags: "v1"}}
`)
	spec, errs, ok := s.Match(t.Context(), app("team-a", "shop", nil))
	if !ok || spec == nil {
		t.Fatalf("Match = %v, %v, %v", spec, errs, ok)
	}
	got := map[string]string{}
	for _, img := range spec.Images {
		got[img.Alias] = img.Policy.Strategy + " | " + img.Policy.Constraint + " | " + img.Policy.AllowTags + " | " + strings.Join(img.Policy.IgnoreTags, " ; ")
	}
	want := map[string]string{
		"range": "semver | >=1.0.3 <1.0.8 |  | ",
		"comma": "semver | >=1.0, <2.0 |  | ",
		"or":    "SemVer | 1.0.4 || 1.0.6 |  | ",
		// "newest" is unknown: semver, said once on the field it came from.
		"ign":   " |  |  | regexp:^v[0-9]{1,3}$ ; latest",
		"match": `semver |  | Regexp:^1\. | `,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("images (-want +got):\n%s", d)
	}
	paths, msgs := problemPaths(s.Problems("team-a/shop"))
	wantPaths := []string{
		"spec.commonUpdateSettings.updateStrategy",
		"spec.applicationRefs[0].images[5].commonUpdateSettings.allowTags",
		"spec.applicationRefs[0].images[6].commonUpdateSettings.allowTags",
	}
	if d := cmp.Diff(wantPaths, paths); d != "" {
		t.Errorf("problem paths (-want +got):\n%s\n%s", d, msgs)
	}
	if !strings.Contains(msgs, "semver is used") {
		t.Errorf("the unknown strategy's problem does not say semver is used:\n%s", msgs)
	}
}

// Several ImageUpdaters selecting one Application each add their images
// (argocd-image-updater runs each resource on its own): an alias both use
// is told apart by the resource's name; an image another resource already
// updates, and a resource that would write the Application another way,
// are problems named on that resource, and the rest stays.
func TestSeveralImageUpdatersSelectOneApplication(t *testing.T) {
	s := newSet(t, `
kind: ImageUpdater
metadata: {name: a-web, namespace: team-a}
spec:
  applicationRefs:
  - namePattern: "shop*"
    images: [{alias: app, imageName: ghcr.io/acme/web}, {alias: proxy, imageName: nginx}]
`, `
kind: ImageUpdater
metadata: {name: b-api, namespace: team-a}
spec:
  applicationRefs:
  - namePattern: shop
    images: [{alias: app, imageName: ghcr.io/acme/api}, {alias: web, imageName: ghcr.io/acme/web}, {alias: proxy, imageName: docker.io/library/nginx}]
`, `
kind: ImageUpdater
metadata: {name: c-git, namespace: team-a}
spec:
  writeBackConfig: {method: git}
  applicationRefs:
  - namePattern: shop
    images: [{alias: worker, imageName: ghcr.io/acme/worker}]
`, `
kind: ImageUpdater
metadata: {name: d-other, namespace: team-b}
spec:
  applicationRefs:
  - namePattern: shop
    images: [{alias: other, imageName: ghcr.io/acme/other}]
`)
	spec, errs, ok := s.Match(t.Context(), app("team-a", "shop", nil))
	if !ok || spec == nil {
		t.Fatalf("Match = %v, %v, %v", spec, errs, ok)
	}
	var got []string
	for _, img := range spec.Images {
		got = append(got, img.Alias+"="+img.Name)
	}
	if d := cmp.Diff([]string{"app=ghcr.io/acme/web", "proxy=nginx", "b-api/app=ghcr.io/acme/api"}, got); d != "" {
		t.Errorf("images (-want +got):\n%s", d)
	}
	if spec.WriteBack.Method != imageupdate.MethodArgoCD {
		t.Errorf("write-back %+v, want the first resource's (argocd)", spec.WriteBack)
	}
	paths, msgs := problemPaths(errs)
	if d := cmp.Diff([]string{"spec.applicationRefs[0].images[1]", "spec.applicationRefs[0].images[2]", "spec.writeBackConfig.method"}, paths); d != "" {
		t.Errorf("problem paths (-want +got):\n%s\n%s", d, msgs)
	}
	for _, want := range []string{"team-a/b-api", "also updated by ImageUpdater team-a/a-web", "team-a/c-git", "images worker are not updated"} {
		if !strings.Contains(msgs, want) {
			t.Errorf("problems do not say %q:\n%s", want, msgs)
		}
	}
	// Each resource's status counts the Application and lists its own
	// problems only (nginx spelt out is the same image).
	w := &StatusWriter{Set: s, Apps: apps{app("team-a", "shop", nil)}}
	obs := w.observe()
	for key, want := range map[string]int{"team-a/a-web": 0, "team-a/b-api": 2, "team-a/c-git": 1} {
		if o := obs[key]; o.apps != 1 || len(o.problems) != want {
			t.Errorf("%s observed apps %d, problems %v; want 1 and %d", key, o.apps, o.problems, want)
		}
	}
	// An update of the api image is the b-api resource's, under the
	// alias that resource gives it.
	s.Observe(app("team-a", "shop", nil), updated("ghcr.io/acme/api", "1.1.0"))
	if u := s.updates["team-a/b-api"]; u == nil || u.list[0].alias != "app" {
		t.Errorf("the api update was not recorded for team-a/b-api: %+v", s.updates)
	}
}

// A useAnnotations applicationRef whose Application's annotations give
// nothing to update passes the Application on to the next applicationRef
// that matches (argocd-image-updater's FilterApplicationsForUpdate
// continues when it cannot read the image list, the common settings or
// the write-back from them).
func TestUseAnnotationsPassesOnWhatItCannotRead(t *testing.T) {
	s := newSet(t, `
kind: ImageUpdater
metadata: {name: shop, namespace: team-a}
spec:
  applicationRefs:
  - namePattern: shop-legacy
    useAnnotations: true
  - namePattern: "shop-*"
    images: [{alias: web, imageName: ghcr.io/acme/web}]
`)
	p := imageupdate.Prefix
	tests := []struct {
		name string
		ann  map[string]string
		want string
	}{
		{"image-list read", map[string]string{p + "image-list": "own=ghcr.io/acme/own"}, "own"},
		{"no image-list", nil, "web"},
		{"write-back method unknown", map[string]string{p + "image-list": "own=ghcr.io/acme/own", p + "write-back-method": "svn"}, "web"},
		{"force-update unreadable", map[string]string{p + "image-list": "own=ghcr.io/acme/own", p + "force-update": "yes please"}, "web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, _, ok := s.Match(t.Context(), app("team-a", "shop-legacy", tt.ann))
			if !ok || spec == nil || len(spec.Images) != 1 || spec.Images[0].Alias != tt.want {
				t.Fatalf("Match = %+v, %v; want image %s", spec, ok, tt.want)
			}
		})
	}
}

func updated(image, to string) triggers.Event {
	return triggers.Event{Type: triggers.EventImageUpdated, Image: image, From: "1.0.0", To: to}
}

// The annotation problems of a useAnnotations ref that passed the
// Application on are said even when the ref that takes it has nothing to
// update: Match returns a spec without images, which the reconciler
// reports.
func TestPassedOverProblemsAreSaidWithNothingToUpdate(t *testing.T) {
	s := newSet(t, `
kind: ImageUpdater
metadata: {name: shop, namespace: team-a}
spec:
  applicationRefs:
  - namePattern: shop-legacy
    useAnnotations: true
  - namePattern: "shop-*"
    images: [{alias: web, imageName: "ghcr.io/acme/web", manifestTargets: {plugin: {name: IMG}}}]
`)
	p := imageupdate.Prefix
	spec, errs, ok := s.Match(t.Context(), app("team-a", "shop-legacy", map[string]string{p + "image-list": "own=ghcr.io/acme/own", p + "write-back-method": "svn"}))
	if !ok || spec == nil || len(spec.Images) != 0 {
		t.Fatalf("Match = %+v, %v; want a spec without images", spec, ok)
	}
	if _, msgs := problemPaths(errs); !strings.Contains(msgs, "write-back-method") {
		t.Errorf("problems %q do not name the broken write-back-method annotation", msgs)
	}
}
