package imageupdaters

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/config/imageupdater"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/registry/imageref"
	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

func parse(tb testing.TB, doc string) *imageupdater.Resource {
	tb.Helper()
	u, err := imageupdater.Parse([]byte(doc))
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

func newSet(tb testing.TB, docs ...string) *Set {
	tb.Helper()
	s := &Set{Tenancy: &tenancy.Rules{}, Log: slog.New(slog.DiscardHandler)}
	for _, d := range docs {
		s.Apply(parse(tb, d), nil)
	}
	return s
}

const shop = `
kind: ImageUpdater
metadata: {name: shop, namespace: team-a, generation: 3}
spec:
  commonUpdateSettings: {updateStrategy: semver, pullSecret: "pullsecret:team-a/regcred"}
  writeBackConfig: {method: "git:secret:team-a/git", gitConfig: {branch: main, writeBackTarget: "helmvalues:values.yaml"}}
  applicationRefs:
  - namePattern: "shop-*"
    images:
    - alias: web
      imageName: ghcr.io/acme/web:~1.2
      manifestTargets: {helm: {name: image.repository, tag: image.tag}}
    - alias: bad
      imageName: "ghcr.io/acme/bad:~~1"
    - alias: arm
      imageName: ghcr.io/acme/arm
      commonUpdateSettings: {platforms: [linux/arm64]}
  - namePattern: shop-legacy
    useAnnotations: true
  - namePattern: shop-thief
    images:
    - {alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {pullSecret: "pullsecret:team-b/regcred"}}
    writeBackConfig: {method: "git:secret:team-b/git"}
`

// The rules read as the annotations that say the same: same spec, and each
// problem the annotation reader finds names the resource's field.
func TestCompileIsTheEquivalentAnnotations(t *testing.T) {
	res := compile(parse(t, shop))
	r := &res.rules[len(res.rules)-1] // "shop-*" is the least specific
	if r.NamePattern != "shop-*" {
		t.Fatalf("order: %+v", res.rules)
	}
	p := imageupdate.Prefix
	want := map[string]string{
		p + "image-list":          "web=ghcr.io/acme/web:~1.2,arm=ghcr.io/acme/arm",
		p + "web.update-strategy": "semver",
		p + "web.pull-secret":     "pullsecret:team-a/regcred",
		p + "web.helm.image-name": "image.repository",
		p + "web.helm.image-tag":  "image.tag",
		p + "arm.update-strategy": "semver",
		p + "arm.pull-secret":     "pullsecret:team-a/regcred",
		p + "arm.platforms":       "linux/arm64",
		p + "write-back-method":   "git:secret:team-a/git",
		p + "write-back-target":   "helmvalues:values.yaml",
		p + "git-branch":          "main",
	}
	wantSpec, errs := imageupdate.FromAnnotations(want)
	if wantSpec == nil || len(errs) != 1 { // platforms with semver, as below
		t.Fatalf("the equivalent annotations: %v %v", wantSpec, errs)
	}
	if d := cmp.Diff(wantSpec, &r.spec, cmpopts.IgnoreUnexported(imageupdate.Spec{}), cmp.Comparer(sameRepository)); d != "" {
		t.Errorf("spec, against the equivalent annotations' (-want +got):\n%s", d)
	}
	var got []string
	for _, err := range res.problems {
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Fatalf("problem %v is not a FieldError", err)
		}
		got = append(got, fe.Path)
	}
	// The bad constraint names imageName; platforms with semver is a
	// warning (the image stays) naming where platforms was set.
	wantPaths := []string{"spec.applicationRefs[0].images[1].imageName", "spec.applicationRefs[0].images[2].commonUpdateSettings.platforms"}
	if d := cmp.Diff(wantPaths, got); d != "" {
		t.Errorf("problem paths (-want +got):\n%s\n%v", d, res.problems)
	}
	if r.images != 2 {
		t.Errorf("images = %d, want 2", r.images)
	}
}

func sameRepository(a, b imageref.Repository) bool { return a.String() == b.String() }

func app(ns, name string, ann map[string]string) *watcher.App {
	return &watcher.App{Namespace: ns, Name: name, Annotations: ann}
}

func TestMatchPrecedenceAndTenancy(t *testing.T) {
	s := newSet(t, shop, `
kind: ImageUpdater
metadata: {name: a-first, namespace: team-a}
spec:
  applicationRefs:
  - namePattern: both
    images: [{alias: api, imageName: ghcr.io/acme/api}]
`, `
kind: ImageUpdater
metadata: {name: z-last, namespace: team-a}
spec:
  applicationRefs:
  - namePattern: both
    images: [{alias: other, imageName: ghcr.io/acme/other}]
`)
	own := map[string]string{imageupdate.Prefix + "image-list": "mine=ghcr.io/acme/mine"}
	aliases := func(spec *imageupdate.Spec) []string {
		var out []string
		if spec != nil {
			for _, img := range spec.Images {
				out = append(out, img.Alias)
			}
		}
		return out
	}
	tests := []struct {
		name     string
		app      *watcher.App
		wantOK   bool
		want     []string
		wantErrs []string
	}{
		{"resource wins over annotations", app("team-a", "shop-web", own), true, []string{"web", "arm"}, nil},
		{"useAnnotations reads the annotations", app("team-a", "shop-legacy", own), true, []string{"mine"}, nil},
		{"another namespace is never selected", app("team-b", "shop-web", own), false, nil, nil},
		{"no resource selects it", app("team-a", "blog", own), false, nil, nil},
		{"each resource selecting it adds its images, by name", app("team-a", "both", nil), true, []string{"api", "other"}, nil},
		{"another namespace's Secrets are refused, naming the field", app("team-a", "shop-thief", nil), true, nil, []string{
			"ImageUpdater team-a/shop spec.applicationRefs[2].images[0].commonUpdateSettings.pullSecret: pullsecret:team-b/regcred for image web: refused",
			"ImageUpdater team-a/shop spec.applicationRefs[2].writeBackConfig.method: refused",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, errs, ok := s.Match(t.Context(), tt.app)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v", ok)
			}
			if d := cmp.Diff(tt.want, aliases(spec)); d != "" {
				t.Errorf("images (-want +got):\n%s", d)
			}
			if len(errs) != len(tt.wantErrs) {
				t.Fatalf("errs = %v, want %d", errs, len(tt.wantErrs))
			}
			for i, err := range errs {
				if !strings.HasPrefix(err.Error(), tt.wantErrs[i]) || !errors.Is(err, tenancy.ErrRefused) {
					t.Errorf("err %d = %q, want prefix %q wrapping ErrRefused", i, err, tt.wantErrs[i])
				}
			}
			if spec != nil && spec.Source != imageupdate.SourceAnnotations {
				t.Errorf("source %q: the reconciler applies the annotations' tenancy rules to SourceAnnotations only", spec.Source)
			}
		})
	}
	thief, _, _ := s.Match(t.Context(), app("team-a", "shop-thief", nil))
	if thief.WriteBack.Method != "" {
		t.Errorf("the refused git:secret left write-back method %q", thief.WriteBack.Method)
	}
}

type apps []*watcher.App

func (a apps) AppKeys() []string {
	var out []string
	for _, x := range a {
		out = append(out, x.Key())
	}
	return out
}

func (a apps) AppView(key string) *watcher.App {
	for _, x := range a {
		if x.Key() == key {
			return x
		}
	}
	return nil
}

func TestStatusDesired(t *testing.T) {
	s := newSet(t, shop)
	running := func(a *watcher.App, images ...string) *watcher.App { a.Images = images; return a }
	w := &StatusWriter{Set: s, Apps: apps{
		running(app("team-a", "shop-web", nil), "ghcr.io/acme/web:1.0.0", "ghcr.io/acme/arm:1.0.0"),
		running(app("team-a", "shop-legacy", map[string]string{imageupdate.Prefix + "image-list": "a=x/a,b=x/b"}), "x/a:1"),
		app("team-a", "shop-empty-legacy", nil),
		app("team-b", "shop-web", nil),
	}}
	s.Match(t.Context(), app("team-a", "shop-thief", nil)) // records its refusals
	w.Set.Apply(parse(t, strings.Replace(shop, "shop-legacy", "shop-*legacy", 1)), nil)
	obs := w.observe()["team-a/shop"]
	// shop-web runs web and arm; shop-legacy one of its two annotated
	// images; shop-empty-legacy has no image-list, so the useAnnotations
	// ref passes it on to "shop-*" (web, arm), as argocd-image-updater
	// does, and runs neither. Matched counts what lists an image; managed,
	// what runs. team-b is another namespace; the thief is not among the
	// apps.
	if obs.apps != 3 || obs.images != 3 || len(obs.problems) != 2 {
		t.Fatalf("observed %+v", obs)
	}

	cur := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argocd-image-updater.argoproj.io/v1alpha1", "kind": "ImageUpdater",
		"metadata": map[string]any{"name": "shop", "namespace": "team-a", "generation": int64(3)},
		"status":   map[string]any{"recentUpdates": []any{map[string]any{"alias": "web"}}},
	}}
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	next, changed, err := desired(cur, obs, t0, time.Minute)
	if err != nil || !changed {
		t.Fatalf("first write: changed %v, %v", changed, err)
	}
	st := next.Object["status"].(map[string]any)
	if st["applicationsMatched"] != int64(3) || st["imagesManaged"] != int64(3) || st["observedGeneration"] != int64(3) || st["recentUpdates"] == nil {
		t.Errorf("status %v", st)
	}
	conds := map[string]string{}
	for _, c := range st["conditions"].([]any) {
		m := c.(map[string]any)
		conds[m["type"].(string)] = m["status"].(string) + "/" + m["reason"].(string)
	}
	if d := cmp.Diff(map[string]string{"Ready": "True/ReconcileCompletedWithErrors", "Error": "True/PartialErrors", "Reconciling": "False/Idle"}, conds); d != "" {
		t.Errorf("conditions (-want +got):\n%s", d)
	}
	// Nothing changed: no write, until lastCheckedAt is a refresh old.
	if _, changed, _ := desired(next, obs, t0.Add(30*time.Second), time.Minute); changed {
		t.Error("an unchanged status was written again")
	}
	if _, changed, _ := desired(next, obs, t0.Add(time.Minute), time.Minute); !changed {
		t.Error("lastCheckedAt was not refreshed")
	}
	// The problems gone: Ready succeeds, the transition time moves.
	fixed := *obs
	fixed.problems = nil
	again, changed, _ := desired(next, &fixed, t0.Add(40*time.Second), time.Minute)
	if !changed {
		t.Fatal("a changed status was not written")
	}
	for _, c := range again.Object["status"].(map[string]any)["conditions"].([]any) {
		m := c.(map[string]any)
		if m["type"] == "Ready" && (m["reason"] != ReasonSucceeded || m["lastTransitionTime"] != t0.Format(time.RFC3339)) {
			// Ready stayed True: its transition time is the first one.
			t.Errorf("Ready %v", m)
		}
		if m["type"] == "Error" && m["status"] != string(metav1.ConditionFalse) {
			t.Errorf("Error %v", m)
		}
	}
}

func TestObserveRecentUpdates(t *testing.T) {
	s := newSet(t, shop)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, name := range []string{"shop-a", "shop-b"} {
		s.Observe(app("team-a", name, nil), triggers.Event{Type: triggers.EventImageUpdated, Image: "ghcr.io/acme/web", From: "1.2.0", To: "1.2.3", Time: at})
	}
	s.Observe(app("team-a", "shop-a", nil), triggers.Event{Type: triggers.EventImageUpdateHeld, Image: "ghcr.io/acme/arm", To: "2"})
	s.Observe(app("team-a", "blog", nil), triggers.Event{Type: triggers.EventImageUpdated, Image: "ghcr.io/acme/web", To: "9"})
	w := &StatusWriter{Set: s, Apps: apps{}}
	o := w.observe()["team-a/shop"]
	want := []RecentUpdate{{Alias: "web", Image: "ghcr.io/acme/web", NewVersion: "1.2.3", ApplicationsUpdated: 2,
		UpdatedAt: metav1.NewTime(at), Message: "Updated from 1.2.0 to 1.2.3."}}
	if d := cmp.Diff(want, o.updates); d != "" || !o.lastUpdate.Equal(at) {
		t.Errorf("recent updates (-want +got):\n%s\nlast %v", d, o.lastUpdate)
	}
}

// A branch Git could not push to is refused when the resource is read,
// naming the resource's field, as the annotation would be: the writer
// never sees it.
func TestInvalidBranchNamesTheField(t *testing.T) {
	res := compile(parse(t, `
kind: ImageUpdater
metadata: {name: shop, namespace: team-a}
spec:
  writeBackConfig: {method: git, gitConfig: {branch: "release..1"}}
  applicationRefs:
  - namePattern: "shop-*"
    images: [{alias: web, imageName: ghcr.io/acme/web}]
`))
	var got []string
	for _, err := range res.problems {
		got = append(got, err.Error())
	}
	want := []string{`ImageUpdater team-a/shop spec.writeBackConfig.gitConfig.branch: invalid branch name "release..1": contains ".."`}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
}

// crowsnest.dev/pin-digest on an ImageUpdater pins every rule's digests;
// a value that is not true or false writes nothing and names the
// annotation as the field.
func TestPinDigestAnnotationOnTheResource(t *testing.T) {
	doc := func(v string) string {
		return `
kind: ImageUpdater
metadata: {name: shop, namespace: team-a, annotations: {crowsnest.dev/pin-digest: "` + v + `"}}
spec:
  applicationRefs:
  - namePattern: "shop-*"
    images: [{alias: web, imageName: ghcr.io/acme/web}]
`
	}
	res := compile(parse(t, doc("true")))
	if len(res.problems) != 0 || !res.rules[0].spec.WriteBack.PinDigest || res.rules[0].spec.WriteBack.Method != imageupdate.MethodArgoCD {
		t.Errorf("pin-digest true: write-back %+v, problems %v", res.rules[0].spec.WriteBack, res.problems)
	}
	res = compile(parse(t, doc("always")))
	if len(res.problems) != 1 || !strings.Contains(res.problems[0].Error(), "metadata.annotations[crowsnest.dev/pin-digest]") || res.rules[0].spec.WriteBack.Method != "" {
		t.Errorf("pin-digest always: problems %v, method %q; want the annotation named and nothing written", res.problems, res.rules[0].spec.WriteBack.Method)
	}
}
