package imageupdaters

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crowsnest-dev/crowsnest/triggers"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// statusFact is what the status writer writes for team-a/shop.
type statusFact struct {
	Matched, Images int32
	Generation      int64
	// Conditions are "<type>: <status>/<reason>".
	Conditions []string
}

func shopStatus(t *testing.T, s *Set, list apps, now time.Time) (statusFact, status) {
	t.Helper()
	for _, a := range list {
		s.Match(t.Context(), a) // records each Application's tenancy refusals
	}
	w := &StatusWriter{Set: s, Apps: list}
	o := w.observe()["team-a/shop"]
	if o == nil {
		t.Fatal("team-a/shop not observed")
	}
	cur := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argocd-image-updater.argoproj.io/v1alpha1", "kind": "ImageUpdater",
		"metadata": map[string]any{"name": "shop", "namespace": "team-a", "generation": int64(4)},
	}}
	next, changed, err := desired(cur, o, now, time.Minute)
	if err != nil || !changed {
		t.Fatalf("desired: changed %v, %v", changed, err)
	}
	var st status
	raw, _, _ := unstructured.NestedMap(next.Object, "status")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
		t.Fatal(err)
	}
	got := statusFact{Matched: st.ApplicationsMatched, Images: st.ImagesManaged, Generation: st.ObservedGeneration}
	for _, c := range st.Conditions {
		got.Conditions = append(got.Conditions, c.Type+": "+string(c.Status)+"/"+c.Reason)
	}
	slices.Sort(got.Conditions)
	return got, st
}

// TestAIUImageUpdaterStatusFacts: the status fields and conditions
// crowsnest writes, as AIU's status.go writes them after a run.
func TestAIUImageUpdaterStatusFacts(t *testing.T) {
	succeeded := []string{"Error: False/NoErrors", "Ready: True/ReconcileSucceeded", "Reconciling: False/Idle"}
	partial := []string{"Error: True/PartialErrors", "Ready: True/ReconcileCompletedWithErrors", "Reconciling: False/Idle"}
	failed := []string{"Error: True/ReconcileError", "Ready: False/ReconcileFailed", "Reconciling: False/Idle"}
	plugin := `{alias: x, imageName: ghcr.io/acme/x, manifestTargets: {plugin: {name: X}}}`
	// What each Application runs (status.summary.images): shop-api runs
	// only one of the two images its applicationRef lists.
	running := func(app *watcher.App, images ...string) *watcher.App { app.Images = images; return app }
	list := apps{running(shopWeb(), "ghcr.io/acme/web:1.0.0", "ghcr.io/acme/api:1.0.0"), running(annotated("shop-api", nil), "ghcr.io/acme/web:1.0.0"),
		annotated("shop-broken", nil),
		running(annotated("shop-legacy", ann("image-list", "a=ghcr.io/acme/a,b=ghcr.io/acme/b")), "ghcr.io/acme/a:1", "ghcr.io/acme/b:1"),
		{Namespace: "team-b", Name: "shop-web"}}
	tests := []struct {
		name, source string
		spec         string
		want         statusFact
	}{
		{name: "applicationsMatched counts the Applications with at least one image; imagesManaged the images they run (or force)",
			source: aiuReconcileGo + " (ApplicationsMatched = len(appList)), " + aiuArgocdGo + " (processApplicationForUpdate skips an empty image list), " +
				aiuUpdateGo + " (NumImagesConsidered counts the images ContainsImage finds live)",
			spec: `{applicationRefs: [{namePattern: "shop-*", images: [` + webImage + `, ` + apiImage + `]}, {namePattern: shop-broken, images: [` + plugin + `]}, {namePattern: shop-legacy, useAnnotations: true}]}`,
			want: statusFact{Matched: 3, Images: 5, Generation: 4, Conditions: partial}},
		{name: "no problem: Ready ReconcileSucceeded, Error NoErrors", source: aiuStatusGo + " (setCompletionConditions)",
			spec: `{applicationRefs: [` + webRef + `]}`,
			want: statusFact{Matched: 1, Images: 1, Generation: 4, Conditions: succeeded}},
		{name: "an image refused for one Application (its pullSecret) still counts; Ready ReconcileCompletedWithErrors, Error PartialErrors", source: aiuStatusGo + " (NumErrors > 0), " + aiuUpdateGo + " (NumImagesConsidered += 1, then the pullSecret namespace check: NumErrors += 1)",
			spec: `{applicationRefs: [{namePattern: shop-web, images: [{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {pullSecret: "pullsecret:team-b/regcred"}}]}]}`,
			want: statusFact{Matched: 1, Images: 1, Generation: 4, Conditions: partial}},
		{name: "an image whose imagesVerification key cannot be read still counts; Ready ReconcileCompletedWithErrors, Error PartialErrors", source: aiuStatusGo + " (NumErrors > 0), " + aiuArgocdGo + " (newImageFromImagesVerification: failed to fetch public key secret field)",
			spec: `{applicationRefs: [{namePattern: shop-web, images: [{alias: web, imageName: ghcr.io/acme/web, imagesVerification: {cosignKey: {secretName: gone, key: cosign.pub}}}]}]}`,
			want: statusFact{Matched: 1, Images: 1, Generation: 4, Conditions: partial}},
		{name: "no usable applicationRef: Ready ReconcileFailed, Error ReconcileError", source: aiuStatusGo + " (reconcileErr != nil), " + aiuFilter + " (invalid name pattern)",
			spec: `{applicationRefs: [{namePattern: "shop-[", images: [` + webImage + `]}]}`,
			want: statusFact{Generation: 4, Conditions: failed}},
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := shopStatus(t, newSet(t, iu("shop", tt.spec)), list, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("status (-AIU %s +crowsnest):\n%s", tt.source, diff)
			}
		})
	}
}

// recentUpdates and lastUpdatedAt: one entry per alias and new version,
// counting the Applications, with AIU's message.
func TestAIUImageUpdaterRecentUpdatesFacts(t *testing.T) {
	s := newSet(t, iu("shop", `{applicationRefs: [`+webGlobRef+`]}`))
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i, name := range []string{"shop-web", "shop-api"} {
		s.Observe(annotated(name, nil), triggers.Event{Type: triggers.EventImageUpdated, Image: "ghcr.io/acme/web",
			From: "1.0.0", To: "1.1.0", Time: t0.Add(time.Duration(i) * time.Second)})
	}
	s.Observe(annotated("shop-web", nil), triggers.Event{Type: triggers.EventImageUpdated, Image: "ghcr.io/acme/web", From: "1.1.0", To: "1.2.0", Time: t0.Add(time.Minute)})
	_, st := shopStatus(t, s, apps{shopWeb()}, t0.Add(2*time.Minute))
	want := []RecentUpdate{
		{Alias: "web", Image: "ghcr.io/acme/web", NewVersion: "1.1.0", ApplicationsUpdated: 2, UpdatedAt: metav1.NewTime(t0.Add(time.Second)), Message: "Updated from 1.0.0 to 1.1.0."},
		{Alias: "web", Image: "ghcr.io/acme/web", NewVersion: "1.2.0", ApplicationsUpdated: 1, UpdatedAt: metav1.NewTime(t0.Add(time.Minute)), Message: "Updated from 1.1.0 to 1.2.0."},
	}
	if diff := cmp.Diff(want, st.RecentUpdates); diff != "" {
		t.Errorf("recentUpdates (-AIU %s (buildRecentUpdates) +crowsnest):\n%s", aiuStatusGo, diff)
	}
	if st.LastUpdatedAt == nil || !st.LastUpdatedAt.Equal(&metav1.Time{Time: t0.Add(time.Minute)}) {
		t.Errorf("lastUpdatedAt = %v, want the newest update %v", st.LastUpdatedAt, t0.Add(time.Minute))
	}
	if st.LastCheckedAt == nil || !st.LastCheckedAt.Equal(&metav1.Time{Time: t0.Add(2 * time.Minute)}) {
		t.Errorf("lastCheckedAt = %v, want the time of the write", st.LastCheckedAt)
	}
}

// A key that cannot be read is named, field and all, in the Error
// condition, as AIU puts the failure in its status.
func TestVerifyKeyProblemInStatus(t *testing.T) {
	s := newSet(t, iu("shop", `{imagesVerification: {cosignKey: {secretName: gone, key: cosign.pub}}, applicationRefs: [`+webRef+`]}`))
	s.Secrets = fakeSecrets{}
	_, st := shopStatus(t, s, apps{shopWeb()}, time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	want := "spec.imagesVerification.cosignKey.secretName"
	for _, c := range st.Conditions {
		if c.Type == ConditionError {
			if !strings.Contains(c.Message, want) || !strings.Contains(c.Message, "not updated") {
				t.Errorf("Error condition message %q does not name %s", c.Message, want)
			}
			return
		}
	}
	t.Errorf("no Error condition in %v", st.Conditions)
}
