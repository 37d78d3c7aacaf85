package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/testenv"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

var (
	crdResource          = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	imageUpdaterResource = testenv.ImageUpdatersGVR
)

// installImageUpdaterCRD installs argocd-image-updater v1.3.0's own CRD
// (testdata/aiu) and waits until the apiserver serves it.
func installImageUpdaterCRD(t *testing.T) {
	t.Helper()
	if err := env.InstallImageUpdaterCRD(t.Context()); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(env.Config)
	// The control plane is shared with the other tests, which run
	// without argocd-image-updater's CRD (and the install tests with the
	// shipped RBAC): take it out again, and wait until it is gone.
	t.Cleanup(func() {
		ctx := context.Background()
		if err := dyn.Resource(crdResource).Delete(ctx, testenv.ImageUpdaterCRDName, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the ImageUpdater CRD: %v", err)
			return
		}
		disc := kubernetes.NewForConfigOrDie(env.Config).Discovery()
		waitFor(t, "the ImageUpdater CRD gone, from discovery too", func() bool {
			_, err := dyn.Resource(crdResource).Get(ctx, testenv.ImageUpdaterCRDName, metav1.GetOptions{})
			_, derr := disc.ServerResourcesForGroupVersion(imageUpdaterResource.GroupVersion().String())
			return apierrors.IsNotFound(err) && apierrors.IsNotFound(derr)
		})
	})
}

func createImageUpdater(t *testing.T, ns, doc string) {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(ns)
	if _, err := dynamic.NewForConfigOrDie(env.Config).Resource(imageUpdaterResource).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ImageUpdater (the real CRD validates it): %v", err)
	}
}

func imageUpdaterStatus(t *testing.T, ns, name string) map[string]any {
	t.Helper()
	u, err := dynamic.NewForConfigOrDie(env.Config).Resource(imageUpdaterResource).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, _, _ := unstructured.NestedMap(u.Object, "status")
	return st
}

// condition returns the status condition of type typ, nil when missing.
func condition(st map[string]any, typ string) map[string]any {
	list, _ := st["conditions"].([]any)
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// ImageUpdater resources (argocd-image-updater 1.x's CRD, installed from
// its source) drive the same engine as annotations: two namespaces hold
// the same Applications, one configured by ImageUpdaters, the other by
// the equivalent annotations, and every write (Kubernetes patches: Helm
// parameters and kustomize images, aliases, a kustomize name; Git
// commits: a Helm values file and a kustomization) is the same. Status
// is written as argocd-image-updater writes it. A resource cannot reach
// Applications or Secrets of another namespace; broken fields are named
// in the status and only what they break is left out.
func TestE2EImageUpdaterResources(t *testing.T) {
	kubeconfig, nsCR, dir := e2eCluster(t, "e2e-iu-cr")
	// Without the CRD, auto runs as before and on refuses to start. (In
	// a namespace of their own: the auto one keeps running, and finds the
	// CRD a minute after it is installed.)
	nsNoCRD := env.CreateNamespace(t, "e2e-iu-nocrd")
	for _, mode := range []string{"auto", "on"} {
		d := startDaemon(t, "--kubeconfig", kubeconfig, "--namespace", nsNoCRD, "--imageupdater-resources", mode,
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-format", "json")
		if mode == "auto" {
			d.waitLog(t, "ImageUpdater resources are not served")
			d.waitLog(t, "engine caches synced")
		} else {
			d.waitLog(t, "--imageupdater-resources=on: the apiserver does not serve imageupdaters.argocd-image-updater.argoproj.io/v1alpha1")
		}
	}

	installImageUpdaterCRD(t)
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushTags(t, reg, "team/web", "1.0.0", "1.3.0", "1.4.0", "2.0.0")
	api := pushTags(t, reg, "team/api", "1.0.0", "1.2.0")

	nsAnn := env.CreateNamespace(t, "e2e-iu-ann")
	nsEvil := env.CreateNamespace(t, "e2e-iu-evil")

	gitSrv := testgit.Start(t, testgit.Options{Username: "bot", Password: "s3cret-token"})
	seed := map[string]string{
		"apps/web/values.yaml":        fmt.Sprintf("# web\nimage:\n  repository: %s\n  tag: 1.0.0 # bumped\n", web),
		"apps/web/Chart.yaml":         "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"apps/api/kustomization.yaml": fmt.Sprintf("resources: [deployment.yaml]\nimages:\n- name: %s\n  newTag: 1.0.0\n", api),
		"apps/api/deployment.yaml":    "kind: Deployment\n",
	}
	cs := kubernetes.NewForConfigOrDie(env.Config)
	heads := map[string]string{}
	for _, ns := range []string{nsCR, nsAnn} {
		gitSrv.CreateRepo(t, ns)
		heads[ns] = gitSrv.Seed(t, ns, "main", seed, "initial")
		if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "git-creds"},
			Data:       map[string][]byte{"username": []byte("bot"), "password": []byte("s3cret-token"), "url": []byte(gitSrv.URL)},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A Secret in another namespace that a hostile ImageUpdater names.
	if _, err := cs.CoreV1().Secrets(nsAnn).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "stolen"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// app builds an Application: kind "helm" or "kustomize" (a source
	// block of that kind), repo "" for a Kubernetes write-back.
	app := func(ns, name, kind, repo, path, annotations string, running ...string) {
		src := "{repoURL: https://git.example.com/web.git, path: deploy, " + kind + ": {}}"
		if repo != "" {
			src = fmt.Sprintf("{repoURL: %s, path: %s, targetRevision: main}", repo, path)
		}
		ann := ""
		if annotations != "" {
			ann = "  annotations:\n" + annotations
		}
		createApp(t, ns, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
%s
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: %s
`, name, ann, src), running...)
	}
	a := func(lines ...string) string {
		var b strings.Builder
		for _, l := range lines {
			b.WriteString("    argocd-image-updater.argoproj.io/" + l + "\n")
		}
		return b.String()
	}
	gitMethod := func(ns string) string { return "write-back-method: git:secret:" + ns + "/git-creds" }

	// The annotations side: what each ImageUpdater rule below says.
	app(nsAnn, "web-helm", "helm", "", "", a("image-list: web="+web+":1.x", "web.helm.image-name: image.repository", "web.helm.image-tag: image.tag"), web+":1.0.0")
	app(nsAnn, "web-shadowed", "helm", "", "", a("image-list: web="+web+":1.x", "web.helm.image-name: image.repository", "web.helm.image-tag: image.tag"), web+":1.0.0")
	app(nsAnn, "api-kustomize", "kustomize", "", "", a("image-list: api="+api+":^1", "api.update-strategy: semver", "api.kustomize.image-name: api-image"), api+":1.0.0")
	app(nsAnn, "worker", "kustomize", "", "", a("image-list: web="+web+":^1,api="+api+":^1", "web.ignore-tags: 1.4.0", "api.ignore-tags: 1.4.0"), web+":1.0.0", api+":1.0.0")
	app(nsAnn, "legacy", "kustomize", "", "", a("image-list: "+web+":1.x"), web+":1.0.0")
	app(nsAnn, "broken", "kustomize", "", "", a("image-list: good="+api+":^1"), api+":1.0.0")
	app(nsAnn, "git-helm", "", gitSrv.RepoURL(nsAnn), "apps/web", a("image-list: web="+web+":1.x", "web.helm.image-name: image.repository",
		"web.helm.image-tag: image.tag", gitMethod(nsAnn), "git-branch: main", "write-back-target: helmvalues:values.yaml"), web+":1.0.0")
	app(nsAnn, "git-kustomize", "", gitSrv.RepoURL(nsAnn), "apps/api", a("image-list: api="+api+":^1", gitMethod(nsAnn), "git-branch: main",
		"write-back-target: kustomization"), api+":1.0.0")

	// The ImageUpdater side: the same Applications, no annotations but
	// web-shadowed's (which the resource overrides) and legacy's (which
	// it reads: useAnnotations).
	for _, n := range []string{"web-helm", "web-shadowed"} {
		ann := ""
		if n == "web-shadowed" {
			ann = a("image-list: web=" + web + ":^2")
		}
		app(nsCR, n, "helm", "", "", ann, web+":1.0.0")
	}
	app(nsCR, "api-kustomize", "kustomize", "", "", "", api+":1.0.0")
	app(nsCR, "worker", "kustomize", "", "", "", web+":1.0.0", api+":1.0.0")
	app(nsCR, "legacy", "kustomize", "", "", a("image-list: "+web+":1.x"), web+":1.0.0")
	app(nsCR, "broken", "kustomize", "", "", "", api+":1.0.0")
	app(nsCR, "hostile", "kustomize", "", "", "", web+":1.0.0")
	app(nsCR, "git-helm", "", gitSrv.RepoURL(nsCR), "apps/web", "", web+":1.0.0")
	app(nsCR, "git-kustomize", "", gitSrv.RepoURL(nsCR), "apps/api", "", api+":1.0.0")

	createImageUpdater(t, nsCR, fmt.Sprintf(`
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata: {name: kube-apps}
spec:
  commonUpdateSettings: {updateStrategy: semver}
  applicationRefs:
  - namePattern: "web-*"
    images:
    - alias: web
      imageName: %[1]s:1.x
      manifestTargets: {helm: {name: image.repository, tag: image.tag}}
  - namePattern: api-kustomize
    images:
    - alias: api
      imageName: %[2]s:^1
      manifestTargets: {kustomize: {name: api-image}}
  - namePattern: worker
    commonUpdateSettings: {ignoreTags: ["1.4.0"]}
    images:
    - {alias: web, imageName: "%[1]s:^1"}
    - {alias: api, imageName: "%[2]s:^1"}
  - namePattern: legacy
    useAnnotations: true
  - namePattern: broken
    images:
    - {alias: bad, imageName: "%[1]s:1.x", commonUpdateSettings: {allowTags: "regexp:(("}}
    - {alias: good, imageName: "%[2]s:^1"}
  - namePattern: hostile
    images:
    - {alias: web, imageName: "%[1]s:1.x", commonUpdateSettings: {pullSecret: "pullsecret:%[3]s/stolen"}}
`, web, api, nsAnn))
	createImageUpdater(t, nsCR, fmt.Sprintf(`
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata: {name: git-apps}
spec:
  writeBackConfig:
    method: git:secret:%[3]s/git-creds
    gitConfig: {branch: main}
  applicationRefs:
  - namePattern: git-helm
    writeBackConfig: {gitConfig: {writeBackTarget: "helmvalues:values.yaml"}}
    images:
    - alias: web
      imageName: %[1]s:1.x
      manifestTargets: {helm: {name: image.repository, tag: image.tag}}
  - namePattern: git-kustomize
    writeBackConfig: {gitConfig: {writeBackTarget: kustomization}}
    images: [{alias: api, imageName: "%[2]s:^1"}]
`, web, api, nsCR))
	// Hostile: a resource in another namespace selecting every name, and
	// wanting 2.x: it must reach none of nsCR's or nsAnn's Applications.
	createImageUpdater(t, nsEvil, fmt.Sprintf(`
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata: {name: everything}
spec:
  applicationRefs:
  - namePattern: "*"
    images: [{alias: web, imageName: "%s:^2"}]
`, web))

	// nsCR plays Argo CD's namespace; its default project admits the
	// other two, as Argo CD's "applications in any namespace" needs.
	createProject(t, nsCR, "default", []any{"*"}, []any{nsAnn, nsEvil})
	metricsAddr := freeAddr(t)
	d := startDaemon(t, "--kubeconfig", kubeconfig, "--namespace", nsCR+","+nsAnn+","+nsEvil, "--argocd-namespace", nsCR, "--metrics-bind-address", metricsAddr,
		"--health-probe-bind-address", "0", "--log-format", "json", "--git-cache-dir", filepath.Join(dir, "git"))

	// Kubernetes write-back: each Application's source ends the same in
	// both namespaces, and was changed.
	source := func(ns, name string) map[string]any {
		u, err := appsIn(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		src, _, _ := unstructured.NestedMap(u.Object, "spec", "source")
		return src
	}
	kubeApps := []string{"web-helm", "web-shadowed", "api-kustomize", "worker", "legacy", "broken"}
	initial := map[string]map[string]any{}
	for _, n := range kubeApps {
		initial[n] = source(nsAnn, n)
	}
	for _, n := range kubeApps {
		waitFor(t, n+" updated the same way in both namespaces", func() bool {
			got := source(nsAnn, n)
			return !cmp.Equal(initial[n], got) && cmp.Equal(got, source(nsCR, n))
		})
	}
	// What the writes are, spelled out once.
	helm, _, _ := unstructured.NestedSlice(source(nsCR, "web-shadowed"), "helm", "parameters")
	if want := []any{
		map[string]any{"name": "image.repository", "value": web, "forceString": true},
		map[string]any{"name": "image.tag", "value": "1.4.0", "forceString": true},
	}; !cmp.Equal(want, helm) {
		t.Errorf("web-shadowed helm parameters (the resource wins over its annotations' ^2) (-want +got):\n%s", cmp.Diff(want, helm))
	}
	for name, want := range map[string][]string{
		"api-kustomize": {"api-image=" + api + ":1.2.0"},
		"worker":        {web + ":1.3.0", api + ":1.2.0"},
		"legacy":        {web + ":1.4.0"},
		"broken":        {api + ":1.2.0"},
	} {
		if got := kustomizeImages(t, nsCR, name); !cmp.Equal(want, got) {
			t.Errorf("%s kustomize images (-want +got):\n%s", name, cmp.Diff(want, got))
		}
	}

	// Git write-back: the same files in both repositories.
	for _, ns := range []string{nsCR, nsAnn} {
		waitFor(t, "a commit in "+ns, func() bool { return gitSrv.Head(t, ns, "main") != heads[ns] })
	}
	for _, f := range []string{"apps/web/values.yaml", "apps/api/kustomization.yaml"} {
		waitFor(t, f+" the same in both repositories and changed", func() bool {
			cr, _ := gitSrv.ReadFile(t, nsCR, "main", f)
			ann, _ := gitSrv.ReadFile(t, nsAnn, "main", f)
			return cr == ann && cr != seed[f]
		})
	}
	if got, _ := gitSrv.ReadFile(t, nsCR, "main", "apps/web/values.yaml"); !strings.Contains(got, "tag: 1.4.0 # bumped") {
		t.Errorf("values.yaml:\n%s", got)
	}

	// Status, as argocd-image-updater writes it.
	waitFor(t, "kube-apps status", func() bool {
		st := imageUpdaterStatus(t, nsCR, "kube-apps")
		return st["applicationsMatched"] == int64(7) && condition(st, "Error") != nil
	})
	st := imageUpdaterStatus(t, nsCR, "kube-apps")
	// web-helm, web-shadowed, api-kustomize, worker (2), legacy, broken
	// (its good image), hostile (matched; its image refused).
	if st["imagesManaged"] != int64(8) || st["lastCheckedAt"] == nil || st["observedGeneration"] != int64(1) {
		t.Errorf("kube-apps status: %v", st)
	}
	ready, errCond := condition(st, "Ready"), condition(st, "Error")
	if ready["status"] != "True" || ready["reason"] != "ReconcileCompletedWithErrors" || errCond["status"] != "True" || errCond["reason"] != "PartialErrors" {
		t.Errorf("kube-apps conditions: %v", st["conditions"])
	}
	msg, _ := errCond["message"].(string)
	for _, want := range []string{
		"spec.applicationRefs[4].images[0].commonUpdateSettings.allowTags:",
		"spec.applicationRefs[5].images[0].commonUpdateSettings.pullSecret: pullsecret:" + nsAnn + "/stolen",
		"refused by the tenancy rules",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("Error condition message lacks %q:\n%s", want, msg)
		}
	}
	if got := kustomizeImages(t, nsCR, "hostile"); len(got) != 0 {
		t.Errorf("hostile's image was updated with another namespace's Secret: %v", got)
	}
	// recentUpdates: web to 1.4.0 in web-helm and web-shadowed, counted
	// once, as argocd-image-updater aggregates by alias and version.
	waitFor(t, "kube-apps recentUpdates", func() bool {
		st := imageUpdaterStatus(t, nsCR, "kube-apps")
		list, _ := st["recentUpdates"].([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			if m["alias"] == "web" && m["newVersion"] == "1.4.0" && m["image"] == web && m["applicationsUpdated"] == int64(2) {
				return st["lastUpdatedAt"] != nil
			}
		}
		return false
	})
	waitFor(t, "git-apps and everything status", func() bool {
		g := imageUpdaterStatus(t, nsCR, "git-apps")
		e := imageUpdaterStatus(t, nsEvil, "everything")
		r := condition(g, "Ready")
		ups, _ := g["recentUpdates"].([]any)
		return g["applicationsMatched"] == int64(2) && g["imagesManaged"] == int64(2) && r != nil && r["reason"] == "ReconcileSucceeded" && len(ups) == 2 &&
			e["applicationsMatched"] == int64(0) && condition(e, "Ready") != nil
	})
	// The hostile resource's namePattern "*" matched no Application of
	// another namespace: web-helm and legacy went to 1.x, not its ^2.
	if got := kustomizeImages(t, nsAnn, "legacy"); !cmp.Equal([]string{web + ":1.4.0"}, got) {
		t.Errorf("nsAnn legacy: %v", got)
	}
	d.waitLog(t, `"msg":"invalid ImageUpdater field"`, `spec.applicationRefs[4].images[0].commonUpdateSettings.allowTags`)
	waitFor(t, "the problems metric", func() bool {
		_, body := httpGet(t.Context(), "http://"+metricsAddr+"/metrics")
		return strings.Contains(body, `crowsnest_imageupdater_problems{imageupdater="`+nsCR+`/kube-apps"} 1`) &&
			strings.Contains(body, `crowsnest_imageupdater_status_writes_total{result="success"}`)
	})

	// kubectl get imageupdaters: the CRD's printer columns read it.
	table := getTable(t, nsCR)
	if !strings.Contains(table, "kube-apps") || !strings.Contains(table, `"True"`) {
		t.Errorf("table view: %s", table)
	}

	// A change to a resource is picked up live: worker now allows 1.4.0.
	patch := []byte(`{"spec":{"applicationRefs":[` +
		fmt.Sprintf(`{"namePattern":"worker","images":[{"alias":"web","imageName":"%s:^1"}]}`, web) + `]}}`)
	if _, err := dynamic.NewForConfigOrDie(env.Config).Resource(imageUpdaterResource).Namespace(nsCR).
		Patch(t.Context(), "kube-apps", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "worker's web at 1.4.0 after the resource changed", func() bool {
		imgs := kustomizeImages(t, nsCR, "worker")
		return len(imgs) > 0 && imgs[0] == web+":1.4.0"
	})
	waitFor(t, "kube-apps status of generation 2", func() bool {
		st := imageUpdaterStatus(t, nsCR, "kube-apps")
		r := condition(st, "Ready")
		return st["observedGeneration"] == int64(2) && st["applicationsMatched"] == int64(1) && r != nil && r["reason"] == "ReconcileSucceeded"
	})
	for _, l := range d.lines() {
		if strings.Contains(l, "s3cret-token") {
			t.Fatalf("the Git token appears in the log: %s", l)
		}
	}
}

// getTable reads the namespace's ImageUpdaters as kubectl get does (the
// apiserver's Table, built from the CRD's printer columns).
func getTable(t *testing.T, ns string) string {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/apis/argocd-image-updater.argoproj.io/v1alpha1/namespaces/"+ns+"/imageupdaters").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}
