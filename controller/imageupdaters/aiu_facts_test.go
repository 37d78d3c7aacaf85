package imageupdaters

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/config/imageupdater"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/internal/testsign"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Where argocd-image-updater (AIU) 1.x writes the facts below down: paths in
// github.com/argoproj-labs/argocd-image-updater (v1.3.0 and main agree
// unless a row says otherwise).
const (
	aiuTypesGo       = "api/v1alpha1/imageupdater_types.go"
	aiuCRD           = "config/crd/bases/argocd-image-updater.argoproj.io_imageupdaters.yaml"
	aiuArgocdGo      = "pkg/argocd/argocd.go"
	aiuAnnotationsGo = "pkg/argocd/annotations.go"
	aiuUpdateGo      = "pkg/argocd/update.go"
	aiuReconcileGo   = "internal/controller/reconcile.go"
	aiuStatusGo      = "internal/controller/status.go"
	aiuImageGo       = "registry-scanner/pkg/image/image.go"
	aiuOptionsGo     = "registry-scanner/pkg/image/options.go"
	aiuIndexDoc      = "docs/index.md"
)

// Functions of aiuArgocdGo the rows cite.
const (
	aiuFilter      = aiuArgocdGo + " (FilterApplicationsForUpdate)"
	aiuSpecificity = aiuArgocdGo + " (sortApplicationRefs, calculateSpecificity)"
	aiuMergeCommon = aiuArgocdGo + " (mergeCommonUpdateSettings)"
	aiuMergeVerify = aiuArgocdGo + " (mergeImagesVerification, newImageFromImagesVerification)"
	aiuMergeWBC    = aiuArgocdGo + " (mergeWBCSettings)"
	aiuNewWBC      = aiuArgocdGo + " (newWBCFromSettings)"
	aiuImageList   = aiuArgocdGo + " (parseImageList)"
	aiuTargets     = aiuArgocdGo + " (newImageFromManifestTargetSettings)"
	aiuNewImage    = aiuArgocdGo + " (newImageFromCommonUpdateSettings)"
)

// factImage is what Set.Match says about one image.
type factImage struct {
	Alias, Name string
	Policy      policy.Spec
	PullSecret  string
	Force       bool
	Helm        imageupdate.HelmNames
	Kustomize   string
	// Verified says the image's tags must be signed (Image.Verify).
	Verified bool
}

func factImages(spec *imageupdate.Spec) []factImage {
	if spec == nil {
		return nil
	}
	var out []factImage
	for i := range spec.Images {
		im := &spec.Images[i]
		out = append(out, factImage{Alias: im.Alias, Name: im.Name, Policy: im.Policy, PullSecret: im.PullSecret,
			Force: im.ForceUpdate, Helm: im.Helm, Kustomize: im.KustomizeName, Verified: im.Verify != nil})
	}
	return out
}

// iu is an ImageUpdater named name in team-a with spec, written as YAML
// flow ("{applicationRefs: [...]}") to keep rows short.
func iu(name, spec string) string {
	return "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\n" +
		"metadata: {name: " + name + ", namespace: team-a, generation: 1}\nspec: " + spec + "\n"
}

// shopIU is the ImageUpdater "shop" with spec.
func shopIU(spec string) []string { return []string{iu("shop", spec)} }

// at is a problem of team-a/shop at path.
func at(path string) string { return "team-a/shop " + path }

// ann is argocd-image-updater annotations from key, value pairs (keys
// without the prefix).
func ann(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[imageupdate.Prefix+kv[i]] = kv[i+1]
	}
	return m
}

// problemLog records the problems a Set logs ("invalid ImageUpdater
// field"), one per problem and generation.
type problemLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *problemLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *problemLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *problemLog) WithGroup(string) slog.Handler            { return l }

func (l *problemLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Key == "error" {
			l.mu.Lock()
			l.errs = append(l.errs, err)
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

// problemNames are errs as "<namespace>/<name> <field path>" for an
// ImageUpdater field and "annotation <key>" for an Application's
// annotation, sorted.
func problemNames(errs []error) []string {
	var out []string
	for _, err := range errs {
		var fe *FieldError
		var ae *imageupdate.AnnotationError
		switch {
		case errors.As(err, &fe):
			out = append(out, fe.Resource+" "+fe.Path)
		case errors.As(err, &ae):
			out = append(out, "annotation "+ae.Key[len(imageupdate.Prefix):])
		default:
			out = append(out, err.Error())
		}
	}
	slices.Sort(out)
	return out
}

// factRow is one AIU fact: ImageUpdaters in force, an Application, and
// what Set.Match gives it.
type factRow struct {
	name   string
	source string
	docs   []string
	app    *watcher.App // nil: team-a/shop-web, no labels or annotations
	// unselected: no ImageUpdater selects the Application (Match's ok is
	// false).
	unselected bool
	images     []factImage
	wb         *imageupdate.WriteBack // nil: not checked
	// problems are those the Set logs for the resources and those Match
	// returns for the Application (problemNames).
	problems []string
}

// shopWeb is the Application most rows match.
func shopWeb() *watcher.App { return &watcher.App{Namespace: "team-a", Name: "shop-web"} }

// labelledWeb is shopWeb with labels.
func labelledWeb(lbls map[string]string) *watcher.App {
	return &watcher.App{Namespace: "team-a", Name: "shop-web", Labels: lbls}
}

func annotated(name string, a map[string]string) *watcher.App {
	return &watcher.App{Namespace: "team-a", Name: name, Annotations: a}
}

func runFacts(t *testing.T, rows []factRow) {
	t.Helper()
	for i := range rows {
		tt := &rows[i]
		t.Run(tt.name, func(t *testing.T) {
			rec := &problemLog{}
			// The Secret every row's cosignKey names holds a real key.
			secrets := fakeSecrets{"team-a/cosign": {"cosign.pub": []byte(testsign.NewSigner(t, testsign.ECDSA).PublicPEM)},
				"team-a/kms": {"cosign.pub": []byte("awskms:///alias/cosign")}, "team-a/text": {"cosign.pub": []byte("not a key")},
				"team-a/argocd-secret": {"cosign.pub": []byte(testsign.NewSigner(t, testsign.ECDSA).PublicPEM)}}
			s := &Set{Tenancy: &tenancy.Rules{}, Secrets: secrets, Log: slog.New(rec)}
			for _, d := range tt.docs {
				s.Apply(parse(t, d), nil)
			}
			a := tt.app
			if a == nil {
				a = shopWeb()
			}
			spec, errs, ok := s.Match(t.Context(), a)
			if ok == tt.unselected {
				t.Fatalf("selected = %v, want %v (AIU %s); images %v, errors %v", ok, !tt.unselected, tt.source, factImages(spec), errs)
			}
			got := factImages(spec)
			if diff := cmp.Diff(tt.images, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("images (-AIU %s +crowsnest):\n%s\nerrors: %v %v", tt.source, diff, rec.errs, errs)
			}
			if tt.wb != nil {
				var wb imageupdate.WriteBack
				if spec != nil {
					wb = spec.WriteBack
				}
				if diff := cmp.Diff(*tt.wb, wb); diff != "" {
					t.Errorf("write-back (-AIU %s +crowsnest):\n%s\nerrors: %v %v", tt.source, diff, rec.errs, errs)
				}
			}
			if diff := cmp.Diff(tt.problems, problemNames(slices.Concat(rec.errs, errs)), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("problems (-want +got):\n%s\nerrors: %v %v", diff, rec.errs, errs)
			}
		})
	}
}

// verified is img with its tags to be signed.
func verified(img factImage) factImage { img.Verified = true; return img }

// fakeSecrets are Secrets by namespace/name, for rows that need no
// apiserver (the e2e reads them from one).
type fakeSecrets map[string]map[string][]byte

func (f fakeSecrets) Get(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	data, ok := f[namespace+"/"+name]
	if !ok {
		return nil, fmt.Errorf("secrets %q not found", name)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: data}, nil
}

// web is the image most rows list, as Match gives it with no setting.
var web = factImage{Alias: "web", Name: "ghcr.io/acme/web"}

// withPolicy is img with policy p.
func withPolicy(img factImage, p policy.Spec) factImage { img.Policy = p; return img }

// sourceTarget is the default target: Argo CD's parameter override file
// (the argocd method patches the same overrides into the Application).
var sourceTarget = imageupdate.Target{Kind: imageupdate.TargetArgoCDSource}

var argocdWB = imageupdate.WriteBack{Method: imageupdate.MethodArgoCD, Target: sourceTarget}

// gitWB is the git method's write-back to target, with the repository's
// Argo CD credentials.
func gitWB(target imageupdate.Target) *imageupdate.WriteBack {
	return &imageupdate.WriteBack{Method: imageupdate.MethodGit, Target: target}
}

// Fragments of specs the rows share (YAML flow).
const (
	webImage    = `{alias: web, imageName: ghcr.io/acme/web}`
	apiImage    = `{alias: api, imageName: ghcr.io/acme/api}`
	cosignKey   = `cosignKey: {secretName: cosign, key: cosign.pub}`
	webRef      = `{namePattern: shop-web, images: [` + webImage + `]}`
	webGlobRef  = `{namePattern: "shop-*", images: [` + webImage + `]}`
	apiExactRef = `{namePattern: shop-web, images: [` + apiImage + `]}`
)

var api = factImage{Alias: "api", Name: "ghcr.io/acme/api"}

// TestAIUImageUpdaterSelectionFacts: which applicationRef of which
// ImageUpdater decides for an Application (spec.applicationRefs,
// namePattern, labelSelectors, useAnnotations, specificity, several
// resources).
func TestAIUImageUpdaterSelectionFacts(t *testing.T) {
	team := map[string]string{"team": "a"}
	runFacts(t, []factRow{
		{name: "applicationRefs is required: an empty list selects nothing", source: aiuFilter + " (\"no application references defined\"), " + aiuCRD + " (MinItems=1)",
			docs: shopIU(`{applicationRefs: []}`), unselected: true, problems: []string{at("spec.applicationRefs")}},
		{name: "namePattern is a glob on the Application's name", source: aiuArgocdGo + " (nameMatchesPattern: filepath.Match)",
			docs: shopIU(`{applicationRefs: [` + webGlobRef + `]}`), images: []factImage{web}, wb: &argocdWB},
		{name: "a namePattern that does not match selects nothing", source: aiuArgocdGo + " (nameMatchesPattern)",
			docs: shopIU(`{applicationRefs: [` + webGlobRef + `]}`), app: annotated("blog", nil), unselected: true},
		{name: "only Applications of the resource's own namespace are selected", source: aiuFilter + " (ctrlclient.InNamespace(cr.Namespace))",
			docs: shopIU(`{applicationRefs: [` + webGlobRef + `]}`), app: &watcher.App{Namespace: "team-b", Name: "shop-web"}, unselected: true},
		{name: "namePattern is required", source: aiuCRD + " (required: namePattern)",
			docs: shopIU(`{applicationRefs: [{images: [` + webImage + `]}]}`), unselected: true,
			problems: []string{at("spec.applicationRefs[0].namePattern")}},
		{name: "an invalid namePattern drops only its applicationRef (deliberate: AIU fails the whole resource)", source: aiuFilter + " (\"Pre-validate all name patterns\")",
			docs:   shopIU(`{applicationRefs: [{namePattern: "shop-[", images: [` + apiImage + `]}, ` + webGlobRef + `]}`),
			images: []factImage{web}, problems: []string{at("spec.applicationRefs[0].namePattern")}},
		{name: "namePattern is the applicationRefs' key: a second ref with the same pattern is refused", source: aiuTypesGo + " (+listMapKey=namePattern)",
			docs:   shopIU(`{applicationRefs: [` + webGlobRef + `, {namePattern: "shop-*", images: [` + apiImage + `]}]}`),
			images: []factImage{web}, problems: []string{at("spec.applicationRefs[1].namePattern")}},
		{name: "labelSelectors.matchLabels must all match", source: aiuArgocdGo + " (nameMatchesLabels)",
			docs:   shopIU(`{applicationRefs: [{namePattern: "shop-*", labelSelectors: {matchLabels: {team: a}}, images: [` + webImage + `]}]}`),
			app:    labelledWeb(team),
			images: []factImage{web}},
		{name: "an Application without the selector's labels is not selected", source: aiuArgocdGo + " (nameMatchesLabels)",
			docs:       shopIU(`{applicationRefs: [{namePattern: "shop-*", labelSelectors: {matchLabels: {team: a}}, images: [` + webImage + `]}]}`),
			unselected: true},
		{name: "labelSelectors.matchExpressions", source: aiuArgocdGo + " (nameMatchesLabels: metav1.LabelSelectorAsSelector)",
			docs:   shopIU(`{applicationRefs: [{namePattern: "shop-*", labelSelectors: {matchExpressions: [{key: tier, operator: In, values: [web, api]}]}, images: [` + webImage + `]}]}`),
			app:    labelledWeb(map[string]string{"tier": "web"}),
			images: []factImage{web}},
		{name: "an invalid labelSelectors matches nothing: the Application goes to the next applicationRef", source: aiuArgocdGo + " (nameMatchesLabels: \"An invalid selector should not match anything\")",
			docs:   shopIU(`{applicationRefs: [{namePattern: shop-web, labelSelectors: {matchExpressions: [{key: tier, operator: Near}]}, images: [` + apiImage + `]}, ` + webGlobRef + `]}`),
			images: []factImage{web}, problems: []string{at("spec.applicationRefs[0].labelSelectors")}},

		// Specificity: the most specific matching applicationRef decides.
		{name: "an exact name beats a glob written before it", source: aiuSpecificity + " (+1,000,000 without wildcards)",
			docs:   shopIU(`{applicationRefs: [{namePattern: "shop-*", images: [` + apiImage + `]}, ` + webRef + `]}`),
			images: []factImage{web}},
		{name: "an exact name beats a glob with a label selector", source: aiuSpecificity,
			docs:   shopIU(`{applicationRefs: [{namePattern: "shop-*", labelSelectors: {matchLabels: {team: a}}, images: [` + apiImage + `]}, ` + webRef + `]}`),
			app:    labelledWeb(team),
			images: []factImage{web}},
		{name: "a label selector beats more literal characters", source: aiuSpecificity + " (+10,000 for a selector)",
			docs:   shopIU(`{applicationRefs: [{namePattern: "shop-we*", images: [` + apiImage + `]}, {namePattern: "shop-*", labelSelectors: {matchLabels: {team: a}}, images: [` + webImage + `]}]}`),
			app:    labelledWeb(team),
			images: []factImage{web}},
		{name: "each selector term adds weight", source: aiuSpecificity + " (+100 per matchLabels and matchExpressions entry)",
			docs: shopIU(`{applicationRefs: [{namePattern: "shop-*", labelSelectors: {matchLabels: {team: a}}, images: [` + apiImage + `]}, ` +
				`{namePattern: "shop*", labelSelectors: {matchLabels: {team: a}, matchExpressions: [{key: tier, operator: Exists}]}, images: [` + webImage + `]}]}`),
			app:    labelledWeb(map[string]string{"team": "a", "tier": "web"}),
			images: []factImage{web}},
		{name: "more literal characters win", source: aiuSpecificity + " (+1 per literal character)",
			docs:   shopIU(`{applicationRefs: [{namePattern: "shop-*", images: [` + apiImage + `]}, {namePattern: "shop-w*", images: [` + webImage + `]}]}`),
			images: []factImage{web}},
		{name: "character classes and wildcards are not literals; a tie keeps the written order", source: aiuSpecificity + " (stripBracketsRegex; slices.SortStableFunc)",
			docs:   shopIU(`{applicationRefs: [{namePattern: "shop-[vw]eb", images: [` + webImage + `]}, {namePattern: "shop-we?", images: [` + apiImage + `]}]}`),
			images: []factImage{web}},
		{name: "a more specific applicationRef whose labels do not match passes the Application on", source: aiuFilter + " (first matching rule)",
			docs:   shopIU(`{applicationRefs: [{namePattern: shop-web, labelSelectors: {matchLabels: {team: b}}, images: [` + apiImage + `]}, ` + webGlobRef + `]}`),
			app:    labelledWeb(team),
			images: []factImage{web}},

		// useAnnotations.
		{name: "useAnnotations reads the Application's annotations; every other setting of the resource is ignored", source: aiuFilter + " (UseAnnotations branch), " + aiuAnnotationsGo + ", " + aiuTypesGo,
			docs: shopIU(`{commonUpdateSettings: {updateStrategy: digest}, writeBackConfig: {method: git}, applicationRefs: [{namePattern: shop-web, useAnnotations: true, ` +
				`commonUpdateSettings: {allowTags: "regexp:^v"}, writeBackConfig: {method: git}, images: [` + apiImage + `]}]}`),
			app:    annotated("shop-web", ann("image-list", "web=ghcr.io/acme/web:1.x", "web.update-strategy", "alphabetical")),
			images: []factImage{withPolicy(web, policy.Spec{Strategy: "alphabetical"})}, wb: &argocdWB},
		{name: "useAnnotations: false needs images", source: aiuCRD + " (x-kubernetes-validations: useAnnotations or images)",
			docs:       shopIU(`{applicationRefs: [{namePattern: shop-web, useAnnotations: false}]}`),
			unselected: true, problems: []string{at("spec.applicationRefs[0].images")}},
		{name: "(d) useAnnotations without an image-list annotation passes the Application to the next matching applicationRef", source: aiuFilter + " (continue), " + aiuAnnotationsGo + " (getImagesFromAnnotations: \"annotation not found\")",
			docs:   shopIU(`{applicationRefs: [{namePattern: shop-web, useAnnotations: true}, ` + webGlobRef + `]}`),
			images: []factImage{web}, wb: &argocdWB},
		{name: "(d) useAnnotations with an invalid write-back method passes the Application to the next matching applicationRef", source: aiuFilter + " (continue), " + aiuAnnotationsGo + " (getWriteBackConfigFromAnnotations), " + aiuNewWBC,
			docs:   shopIU(`{applicationRefs: [{namePattern: shop-web, useAnnotations: true}, ` + webGlobRef + `]}`),
			app:    annotated("shop-web", ann("image-list", "api=ghcr.io/acme/api", "write-back-method", "svn")),
			images: []factImage{web}, wb: &argocdWB, problems: []string{"annotation write-back-method"}},
		{name: "useAnnotations ignores spec.imagesVerification", source: aiuFilter + " (mergedImagesVerification = applicationRef.ImagesVerification)",
			docs:   shopIU(`{imagesVerification: {enabled: true, ` + cosignKey + `}, applicationRefs: [{namePattern: shop-web, useAnnotations: true}]}`),
			app:    annotated("shop-web", ann("image-list", "web=ghcr.io/acme/web")),
			images: []factImage{web}},
		{name: "useAnnotations honours the applicationRef's imagesVerification: the annotations' images are verified", source: aiuFilter + " (mergedImagesVerification = applicationRef.ImagesVerification)",
			docs:   shopIU(`{applicationRefs: [{namePattern: shop-web, useAnnotations: true, imagesVerification: {enabled: true, ` + cosignKey + `}}]}`),
			app:    annotated("shop-web", ann("image-list", "web=ghcr.io/acme/web")),
			images: []factImage{verified(web)}},
		{name: "useAnnotations with the applicationRef's imagesVerification naming a missing Secret: not updated", source: aiuFilter + " (mergedImagesVerification = applicationRef.ImagesVerification)",
			docs:     shopIU(`{applicationRefs: [{namePattern: shop-web, useAnnotations: true, imagesVerification: {cosignKey: {secretName: gone, key: cosign.pub}}}]}`),
			app:      annotated("shop-web", ann("image-list", "web=ghcr.io/acme/web")),
			problems: []string{at("spec.applicationRefs[0].imagesVerification.cosignKey.secretName")}},

		// Several ImageUpdaters in one namespace.
		{name: "(c) several ImageUpdaters select one Application: each one's images are updated, resources in name order", source: aiuReconcileGo + " (ProcessImageUpdaterCRs runs every CR), " + aiuFilter,
			docs:   []string{iu("b-shop", `{applicationRefs: [`+apiExactRef+`]}`), iu("a-shop", `{applicationRefs: [`+webGlobRef+`]}`)},
			images: []factImage{web, api}, wb: &argocdWB},
		{name: "(c) with several ImageUpdaters, each takes its own most specific applicationRef", source: aiuReconcileGo + ", " + aiuSpecificity,
			docs: []string{
				iu("a-shop", `{applicationRefs: [{namePattern: "shop-*", images: [`+apiImage+`]}, `+webRef+`]}`),
				iu("b-shop", `{applicationRefs: [{namePattern: "shop-*", images: [{alias: worker, imageName: ghcr.io/acme/worker}]}, {namePattern: "blog", images: [`+apiImage+`]}]}`),
			},
			images: []factImage{web, {Alias: "worker", Name: "ghcr.io/acme/worker"}}},
	})
}

// ref is an ImageUpdater with one applicationRef "shop-*" listing images,
// and the spec-level fields before (flow YAML entries, "" for none).
func ref(spec, images string) []string {
	if spec != "" {
		spec += ", "
	}
	return shopIU(`{` + spec + `applicationRefs: [{namePattern: "shop-*", images: [` + images + `]}]}`)
}

// img0 is a problem at a field of the first image of ref.
func img0(field string) string { return at("spec.applicationRefs[0].images[0]." + field) }

// TestAIUImageUpdaterImageFacts: what an image of an applicationRef
// becomes (alias, imageName, commonUpdateSettings at every level,
// manifestTargets, imagesVerification).
func TestAIUImageUpdaterImageFacts(t *testing.T) {
	runFacts(t, []factRow{
		// alias and imageName.
		{name: "imageName is the image and its constraint after ':'", source: aiuImageList + " (image.NewFromIdentifier(alias=imageName))",
			docs:   ref("", `{alias: web, imageName: "ghcr.io/acme/web:1.2.x"}`),
			images: []factImage{withPolicy(web, policy.Spec{Constraint: "1.2.x"})}},
		{name: "a registry port stays in the image name", source: aiuImageGo + " (NewFromIdentifier)",
			docs:   ref("", `{alias: web, imageName: "registry.acme.io:5000/web:~1.2"}`),
			images: []factImage{{Alias: "web", Name: "registry.acme.io:5000/web", Policy: policy.Spec{Constraint: "~1.2"}}}},
		{name: "(a) a constraint with a space is taken whole", source: aiuImageGo + " (NewFromIdentifier: the legacy parser takes all after ':'), " + aiuUpdateGo + " (vc.Constraint = ImageTag.TagName)",
			docs:   ref("", `{alias: web, imageName: "ghcr.io/acme/web:>=1.0.3 <1.0.8"}`),
			images: []factImage{withPolicy(web, policy.Spec{Constraint: ">=1.0.3 <1.0.8"})}},
		{name: "(a) a constraint with a comma is taken whole", source: aiuImageGo + " (NewFromIdentifier), " + aiuUpdateGo,
			docs:   ref("", `{alias: web, imageName: "ghcr.io/acme/web:>=1.0, <2.0"}`),
			images: []factImage{withPolicy(web, policy.Spec{Constraint: ">=1.0, <2.0"})}},
		{name: "(a) a constraint with || is taken whole", source: aiuImageGo + " (NewFromIdentifier), " + aiuUpdateGo,
			docs:   ref("", `{alias: web, imageName: "ghcr.io/acme/web:1.0.4 || 1.0.6"}`),
			images: []factImage{withPolicy(web, policy.Spec{Constraint: "1.0.4 || 1.0.6"})}},
		{name: "alias is required", source: aiuCRD + " (required: alias, imageName)",
			docs: ref("", `{imageName: ghcr.io/acme/web}`), problems: []string{img0("alias")}},
		{name: "imageName is required", source: aiuCRD + " (required: alias, imageName)",
			docs: ref("", `{alias: web}`), problems: []string{img0("imageName")}},
		{name: "alias is the images' key: a second image with the same alias is refused", source: aiuTypesGo + " (+listMapKey=alias)",
			docs:   ref("", webImage+`, {alias: web, imageName: ghcr.io/acme/api}`),
			images: []factImage{web}, problems: []string{at("spec.applicationRefs[0].images[1].alias")}},
		{name: "an alias with '.' is refused (crowsnest's per-image settings keys cannot hold it)", source: aiuTypesGo + " (alias pattern ^[a-zA-Z0-9][a-zA-Z0-9-._]*$)",
			docs: ref("", `{alias: web.v2, imageName: ghcr.io/acme/web}`), problems: []string{img0("alias")}},

		// commonUpdateSettings, field by field.
		{name: "updateStrategy: semver, newest-build, alphabetical, digest, the old names latest and name, any case", source: aiuOptionsGo + " (ParseUpdateStrategy lower-cases)",
			docs: ref("", `{alias: a, imageName: "ghcr.io/acme/a:1.x", commonUpdateSettings: {updateStrategy: semver}}, `+
				`{alias: b, imageName: ghcr.io/acme/b, commonUpdateSettings: {updateStrategy: newest-build}}, `+
				`{alias: c, imageName: "ghcr.io/acme/c:latest", commonUpdateSettings: {updateStrategy: Latest}}, `+
				`{alias: d, imageName: ghcr.io/acme/d, commonUpdateSettings: {updateStrategy: alphabetical}}, `+
				`{alias: e, imageName: ghcr.io/acme/e, commonUpdateSettings: {updateStrategy: name}}, `+
				`{alias: f, imageName: "ghcr.io/acme/f:stable", commonUpdateSettings: {updateStrategy: digest}}`),
			images: []factImage{
				{Alias: "a", Name: "ghcr.io/acme/a", Policy: policy.Spec{Strategy: "semver", Constraint: "1.x"}},
				{Alias: "b", Name: "ghcr.io/acme/b", Policy: policy.Spec{Strategy: "newest-build"}},
				{Alias: "c", Name: "ghcr.io/acme/c", Policy: policy.Spec{Strategy: "Latest"}},
				{Alias: "d", Name: "ghcr.io/acme/d", Policy: policy.Spec{Strategy: "alphabetical"}},
				{Alias: "e", Name: "ghcr.io/acme/e", Policy: policy.Spec{Strategy: "name"}},
				{Alias: "f", Name: "ghcr.io/acme/f", Policy: policy.Spec{Strategy: "digest", Constraint: "stable"}},
			}},
		{name: "(e) an unknown updateStrategy is semver, with a warning naming the field; the image is kept", source: aiuOptionsGo + " (ParseUpdateStrategy: \"Unknown sort option %s -- using semver\")",
			docs:   ref("", `{alias: web, imageName: "ghcr.io/acme/web:1.x", commonUpdateSettings: {updateStrategy: newest}}`),
			images: []factImage{withPolicy(web, policy.Spec{Constraint: "1.x"})}, problems: []string{img0("commonUpdateSettings.updateStrategy")}},
		{name: "forceUpdate", source: aiuNewImage,
			docs:   ref("", `{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {forceUpdate: true}}`),
			images: []factImage{{Alias: "web", Name: "ghcr.io/acme/web", Force: true}}},
		{name: "allowTags: regexp:<re> and any", source: aiuOptionsGo + " (ParseMatch)",
			docs: ref("", `{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {allowTags: "regexp:^v[0-9]+"}}, `+
				`{alias: api, imageName: ghcr.io/acme/api, commonUpdateSettings: {allowTags: any}}`),
			images: []factImage{withPolicy(web, policy.Spec{AllowTags: "regexp:^v[0-9]+"}), withPolicy(api, policy.Spec{AllowTags: "any"})}},
		{name: "allowTags REGEXP: is regexp: (the function name is case-insensitive)", source: aiuOptionsGo + " (ParseMatch: strings.ToLower(opt[0]))",
			docs:   ref("", `{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {allowTags: "REGEXP:^v"}}`),
			images: []factImage{withPolicy(web, policy.Spec{AllowTags: "REGEXP:^v"})}},
		{name: "allowTags neither any nor regexp: matches no tag in AIU; crowsnest refuses the image", source: aiuOptionsGo + " (ParseMatch: MatchFuncNone)",
			docs:     ref("", `{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {allowTags: "glob:v*"}}`),
			problems: []string{img0("commonUpdateSettings.allowTags")}},
		{name: "allowTags with an invalid regexp matches no tag in AIU; crowsnest refuses the image", source: aiuOptionsGo + " (ParseMatch: \"Could not compile regexp\")",
			docs:     ref("", `{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {allowTags: "regexp:("}}`),
			problems: []string{img0("commonUpdateSettings.allowTags")}},
		{name: "ignoreTags is a list of patterns", source: aiuUpdateGo + " (vc.IgnoreList = IgnoreTags)",
			docs:   ref("", `{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {ignoreTags: [latest, "*-rc*"]}}`),
			images: []factImage{withPolicy(web, policy.Spec{IgnoreTags: []string{"latest", "*-rc*"}})}},
		{name: "(b) an ignoreTags entry with a comma stays one entry", source: aiuTypesGo + " (IgnoreTags []string), " + aiuUpdateGo,
			docs:   ref("", `{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {ignoreTags: ["regexp:^v[0-9]{1,3}$", latest]}}`),
			images: []factImage{withPolicy(web, policy.Spec{IgnoreTags: []string{"regexp:^v[0-9]{1,3}$", "latest"}})}},
		{name: "pullSecret: pullsecret: and secret: in the resource's namespace", source: aiuUpdateGo + " (SetEndpointCredentials)",
			docs: ref("", `{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {pullSecret: "pullsecret:team-a/regcred"}}, `+
				`{alias: api, imageName: ghcr.io/acme/api, commonUpdateSettings: {pullSecret: "secret:team-a/creds#token"}}`),
			images: []factImage{{Alias: "web", Name: "ghcr.io/acme/web", PullSecret: "pullsecret:team-a/regcred"},
				{Alias: "api", Name: "ghcr.io/acme/api", PullSecret: "secret:team-a/creds#token"}}},
		{name: "a pullSecret in another namespace is refused", source: aiuUpdateGo + " (\"commonUpdateSettings.pullSecret namespace '%s' differs from app namespace\")",
			docs:     ref("", `{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {pullSecret: "pullsecret:team-b/regcred"}}`),
			problems: []string{img0("commonUpdateSettings.pullSecret")}},
		{name: "env: and ext: pull secrets are refused unless the operator's tenancy.credentials allows them (deliberate: AIU reads its own environment, runs the script)", source: aiuUpdateGo + " (SetEndpointCredentials)",
			docs: ref("", `{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {pullSecret: "env:REGCRED"}}, `+
				`{alias: api, imageName: ghcr.io/acme/api, commonUpdateSettings: {pullSecret: "ext:/app/auth.sh"}}`),
			problems: []string{img0("commonUpdateSettings.pullSecret"), at("spec.applicationRefs[0].images[1].commonUpdateSettings.pullSecret")}},
		{name: "platforms filter newest-build and digest", source: aiuOptionsGo + " (GetPlatformOptions)",
			docs:   ref("", `{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {updateStrategy: newest-build, platforms: [linux/arm64, linux/amd64]}}`),
			images: []factImage{withPolicy(web, policy.Spec{Strategy: "newest-build", Platforms: []string{"linux/arm64", "linux/amd64"}})}},
		{name: "platforms have no effect with semver: the image is kept, with a warning", source: "docs/configuration/images.md (\"For semver and name strategies, the platforms setting has no effect\")",
			docs:   ref("", `{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {platforms: [linux/arm64]}}`),
			images: []factImage{web}, problems: []string{img0("commonUpdateSettings.platforms")}},

		// Merging spec, applicationRef and image settings.
		{name: "spec commonUpdateSettings are every image's defaults", source: aiuMergeCommon,
			docs: ref(`commonUpdateSettings: {updateStrategy: newest-build, allowTags: "regexp:^v", ignoreTags: [latest], pullSecret: "pullsecret:team-a/regcred", forceUpdate: true, platforms: [linux/arm64]}`,
				webImage),
			images: []factImage{{Alias: "web", Name: "ghcr.io/acme/web", PullSecret: "pullsecret:team-a/regcred", Force: true,
				Policy: policy.Spec{Strategy: "newest-build", AllowTags: "regexp:^v", IgnoreTags: []string{"latest"}, Platforms: []string{"linux/arm64"}}}}},
		{name: "applicationRef settings override the spec's, field by field", source: aiuMergeCommon,
			docs: shopIU(`{commonUpdateSettings: {updateStrategy: newest-build, ignoreTags: [latest]}, ` +
				`applicationRefs: [{namePattern: "shop-*", commonUpdateSettings: {updateStrategy: alphabetical}, images: [` + webImage + `]}]}`),
			images: []factImage{withPolicy(web, policy.Spec{Strategy: "alphabetical", IgnoreTags: []string{"latest"}})}},
		{name: "image settings override the applicationRef's, field by field", source: aiuImageList + " (mergeCommonUpdateSettings(appSettings, im.CommonUpdateSettings))",
			docs: shopIU(`{applicationRefs: [{namePattern: "shop-*", commonUpdateSettings: {updateStrategy: alphabetical, allowTags: "regexp:^v"}, ` +
				`images: [{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {allowTags: any}}]}]}`),
			images: []factImage{withPolicy(web, policy.Spec{Strategy: "alphabetical", AllowTags: "any"})}},
		{name: "an explicit empty list below overrides a non-empty one above (AIU tests != nil)", source: aiuMergeCommon + " (if s.IgnoreTags != nil, if s.Platforms != nil)",
			docs: ref(`commonUpdateSettings: {updateStrategy: newest-build, ignoreTags: [latest], platforms: [linux/arm64]}`,
				`{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {ignoreTags: [], platforms: []}}`),
			images: []factImage{withPolicy(web, policy.Spec{Strategy: "newest-build"})}},
		{name: "an omitted or null list below inherits the one above", source: aiuMergeCommon,
			docs: ref(`commonUpdateSettings: {ignoreTags: [latest]}`,
				`{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {ignoreTags: null, forceUpdate: true}}, `+apiImage),
			images: []factImage{{Alias: "web", Name: "ghcr.io/acme/web", Force: true, Policy: policy.Spec{IgnoreTags: []string{"latest"}}},
				withPolicy(api, policy.Spec{IgnoreTags: []string{"latest"}})}},
		{name: "explicit empty strings and false below override the values above", source: aiuMergeCommon + " (pointers: set means set)",
			docs: ref(`commonUpdateSettings: {updateStrategy: newest-build, allowTags: "regexp:^v", pullSecret: "pullsecret:team-a/regcred", forceUpdate: true}`,
				`{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {updateStrategy: "", allowTags: "", pullSecret: "", forceUpdate: false}}`),
			images: []factImage{web}},
		{name: "v1.0-v1.3 CRDs store updateStrategy: semver and forceUpdate: false in every commonUpdateSettings block: those override the level above", source: aiuIndexDoc + " (\"Migrate common update settings when upgrading to v1.4.0 CRDs\")",
			docs: ref(`commonUpdateSettings: {updateStrategy: newest-build, forceUpdate: true}`,
				`{alias: web, imageName: ghcr.io/acme/web, commonUpdateSettings: {allowTags: "regexp:^v", updateStrategy: semver, forceUpdate: false}}`),
			images: []factImage{withPolicy(web, policy.Spec{Strategy: "semver", AllowTags: "regexp:^v"})}},

		// manifestTargets.
		{name: "manifestTargets.helm name and tag name the Helm parameters", source: aiuTargets,
			docs:   ref("", `{alias: web, imageName: ghcr.io/acme/web, manifestTargets: {helm: {name: web.image.repository, tag: web.image.tag}}}`),
			images: []factImage{{Alias: "web", Name: "ghcr.io/acme/web", Helm: imageupdate.HelmNames{ImageName: "web.image.repository", ImageTag: "web.image.tag"}}}},
		{name: "manifestTargets.helm spec wins over name and tag", source: aiuTargets + ", " + aiuTypesGo + " (\"If this is set, name and tag will be ignored\")",
			docs:   ref("", `{alias: web, imageName: ghcr.io/acme/web, manifestTargets: {helm: {spec: web.image, name: web.image.repository, tag: web.image.tag}}}`),
			images: []factImage{{Alias: "web", Name: "ghcr.io/acme/web", Helm: imageupdate.HelmNames{ImageSpec: "web.image"}}}},
		{name: "manifestTargets.helm without names keeps the defaults image.name and image.tag", source: aiuArgocdGo + " (getHelmParamNames)",
			docs:   ref("", `{alias: web, imageName: ghcr.io/acme/web, manifestTargets: {helm: {}}}`),
			images: []factImage{web}},
		{name: "(f) manifestTargets.kustomize.name is the kustomization image the change replaces", source: aiuImageList + " (ContainerImage.KustomizeImage), " + aiuImageGo + " (ContainsImage)",
			docs:   ref("", `{alias: web, imageName: ghcr.io/acme/web, manifestTargets: {kustomize: {name: quay.io/upstream/web}}}`),
			images: []factImage{{Alias: "web", Name: "ghcr.io/acme/web", Kustomize: "quay.io/upstream/web"}}},
		{name: "an empty manifestTargets.kustomize.name renames nothing", source: aiuImageList + " (KustomizeImage only for a name that is not empty)",
			docs:   ref("", `{alias: web, imageName: ghcr.io/acme/web, manifestTargets: {kustomize: {name: ""}}}`),
			images: []factImage{web}},
		{name: "manifestTargets.kustomize needs its name", source: aiuCRD + " (kustomize required: name)",
			docs:     ref("", `{alias: web, imageName: ghcr.io/acme/web, manifestTargets: {kustomize: {}}}`),
			problems: []string{img0("manifestTargets.kustomize.name")}},
		{name: "manifestTargets takes exactly one of helm, kustomize, plugin", source: aiuTargets + " (\"only one of the fields\"), " + aiuCRD + " (x-kubernetes-validations)",
			docs:     ref("", `{alias: web, imageName: ghcr.io/acme/web, manifestTargets: {helm: {name: image.repository}, kustomize: {name: quay.io/upstream/web}}}`),
			problems: []string{img0("manifestTargets")}},
		{name: "manifestTargets.plugin is refused (crowsnest writes no plugin environment variables)", source: aiuTargets + " (PluginEnvName, PluginEnvTag, PluginEnvSpec)",
			docs:     ref("", `{alias: web, imageName: ghcr.io/acme/web, manifestTargets: {plugin: {name: IMAGE_NAME, tag: IMAGE_TAG}}}`),
			problems: []string{img0("manifestTargets.plugin")}},

		// imagesVerification.
		{name: "spec.imagesVerification enabled: the images are verified with the Secret's key", source: aiuMergeVerify + ", " + aiuUpdateGo + " (VerifyWithPublicKey)",
			docs:   ref(`imagesVerification: {enabled: true, `+cosignKey+`}`, webImage),
			images: []factImage{verified(web)}},
		{name: "imagesVerification without enabled is enabled (the CRD defaults it to true)", source: aiuTypesGo + " (+kubebuilder:default:=true), " + aiuMergeVerify,
			docs:   ref("", `{alias: web, imageName: ghcr.io/acme/web, imagesVerification: {`+cosignKey+`}}`),
			images: []factImage{verified(web)}},
		{name: "imagesVerification at a lower level overrides the one above, field by field", source: aiuMergeVerify,
			docs: shopIU(`{imagesVerification: {enabled: true, ` + cosignKey + `}, applicationRefs: [{namePattern: "shop-*", imagesVerification: {enabled: false}, ` +
				`images: [` + webImage + `, {alias: api, imageName: ghcr.io/acme/api, imagesVerification: {enabled: true}}]}]}`),
			images: []factImage{web, verified(factImage{Alias: "api", Name: "ghcr.io/acme/api"})}},
		{name: "imagesVerification naming a missing Secret: the image is not updated, the secretName named", source: aiuMergeVerify + ", " + aiuUpdateGo + " (VerifyWithPublicKey fails)",
			docs: shopIU(`{imagesVerification: {` + cosignKey + `}, applicationRefs: [{namePattern: "shop-*", images: [` + webImage +
				`, {alias: api, imageName: ghcr.io/acme/api, imagesVerification: {cosignKey: {secretName: gone, key: cosign.pub}}}]}]}`),
			images: []factImage{verified(web)}, problems: []string{at("spec.applicationRefs[0].images[1].imagesVerification.cosignKey.secretName")}},
		{name: "imagesVerification naming a key the Secret lacks: the image is not updated, the key named", source: aiuMergeVerify,
			docs:     ref(`imagesVerification: {cosignKey: {secretName: cosign, key: other.pub}}`, webImage),
			problems: []string{at("spec.imagesVerification.cosignKey.key")}},
		{name: "imagesVerification whose key is a key service reference: the image is not updated, the key named", source: aiuMergeVerify,
			docs:     ref(`imagesVerification: {cosignKey: {secretName: kms, key: cosign.pub}}`, webImage),
			problems: []string{at("spec.imagesVerification.cosignKey.key")}},
		{name: "imagesVerification naming a Secret Argo CD keeps for itself: refused, as for annotations' credentials, the secretName named", source: aiuMergeVerify + " (AIU reads any Secret of the namespace)",
			docs:     ref(`imagesVerification: {cosignKey: {secretName: argocd-secret, key: cosign.pub}}`, webImage),
			problems: []string{at("spec.imagesVerification.cosignKey.secretName")}},
		{name: "imagesVerification whose key is not PEM: the image is not updated, the key named", source: aiuMergeVerify,
			docs:     ref(`imagesVerification: {cosignKey: {secretName: text, key: cosign.pub}}`, webImage),
			problems: []string{at("spec.imagesVerification.cosignKey.key")}},
		{name: "imagesVerification on without a cosignKey: the image is not updated", source: aiuCRD + " (x-kubernetes-validations: cosignKey required when enabled), " + aiuMergeVerify + " (newImageFromImagesVerification)",
			docs:     ref(`imagesVerification: {enabled: true}`, webImage),
			problems: []string{at("spec.imagesVerification")}},
	})
}

// everyField is an ImageUpdater with every field of AIU's v1alpha1 API
// (v1.3.0, and main's pullRequest.labels) set at every level it exists,
// spec and status.
const everyField = `
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata: {name: shop, namespace: team-a, generation: 2}
spec:
  commonUpdateSettings: {updateStrategy: semver, forceUpdate: false, allowTags: any, ignoreTags: [latest], pullSecret: "pullsecret:team-a/regcred", platforms: [linux/amd64]}
  writeBackConfig:
    method: git
    gitConfig: {repository: "https://git.acme.io/shop.git", branch: main, writeBackTarget: kustomization, pullRequest: {github: {}, gitlab: {}, labels: [deps]}}
  imagesVerification: {enabled: false, cosignKey: {secretName: cosign, key: cosign.pub}}
  applicationRefs:
  - namePattern: "shop-*"
    labelSelectors: {matchLabels: {team: a}, matchExpressions: [{key: tier, operator: In, values: [web]}]}
    useAnnotations: false
    imagesVerification: {enabled: false, cosignKey: {secretName: cosign, key: cosign.pub}}
    commonUpdateSettings: {updateStrategy: semver, forceUpdate: false, allowTags: any, ignoreTags: [latest], pullSecret: "pullsecret:team-a/regcred", platforms: [linux/amd64]}
    writeBackConfig:
      method: git
      gitConfig: {repository: "https://git.acme.io/shop.git", branch: main, writeBackTarget: kustomization, pullRequest: {github: {}, labels: [deps]}}
    images:
    - alias: web
      imageName: ghcr.io/acme/web
      commonUpdateSettings: {updateStrategy: semver, forceUpdate: false, allowTags: any, ignoreTags: [latest], pullSecret: "pullsecret:team-a/regcred", platforms: [linux/amd64]}
      manifestTargets:
        helm: {name: image.repository, tag: image.tag, spec: image.spec}
        kustomize: {name: ghcr.io/acme/web}
        plugin: {name: IMAGE_NAME, tag: IMAGE_TAG, spec: IMAGE}
      imagesVerification: {enabled: false, cosignKey: {secretName: cosign, key: cosign.pub}}
status:
  observedGeneration: 2
  lastCheckedAt: "2026-05-01T12:00:00Z"
  lastUpdatedAt: "2026-05-01T12:00:00Z"
  applicationsMatched: 1
  imagesManaged: 1
  recentUpdates: [{alias: web, image: ghcr.io/acme/web, newVersion: 1.1.0, applicationsUpdated: 1, updatedAt: "2026-05-01T12:00:00Z", message: "Updated from 1.0.0 to 1.1.0."}]
  conditions: [{type: Ready, status: "True", reason: ReconcileSucceeded, message: ok, lastTransitionTime: "2026-05-01T12:00:00Z", observedGeneration: 2}]
`

// crowsnest reads ImageUpdaters strictly (an unknown field is a problem,
// and is ignored): every field AIU's API defines must be known.
func TestAIUEveryFieldIsKnown(t *testing.T) {
	if _, err := imageupdater.Parse([]byte(everyField)); err != nil {
		t.Errorf("a resource using every field of AIU's %s: %v", aiuTypesGo, err)
	}
}
