package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/internal/argocdenv"
)

// The write-back shapes with the real Argo CD: each test lets Argo CD
// sync team/web 1.0.0 from the seeded repository, runs crowsnest, and
// checks what Argo CD then rendered and recorded. Argo CD's own resync is
// as long as the wait (argoCDWait) in Git mode, so a deployment within
// the wait is crowsnest's refresh request's doing.

// helmWebChart is a local Helm chart in dir/ whose Deployment "web" runs
// {{ .Values.image.name }}:{{ .Values.image.tag }}. Its own values name
// the tag "chart-default", a tag the registry does not have: a
// Deployment at 1.0.0 shows that Argo CD rendered the values the test
// gives elsewhere.
func helmWebChart(w *argoWorld, dir string) map[string]string {
	return map[string]string{
		dir + "/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		dir + "/values.yaml": fmt.Sprintf("image:\n  name: %s\n  tag: chart-default\n", w.image),
		dir + "/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "{{ .Values.image.name }}:{{ .Values.image.tag }}"}]
`,
	}
}

// helmValues is a values file setting team/web at 1.0.0.
func helmValues(w *argoWorld) string {
	return fmt.Sprintf("# the environment's values\nimage:\n  name: %s\n  tag: 1.0.0\n", w.image)
}

// createArgoApp creates the world's automated Application with the
// annotations (lines of YAML) and spec lines (source or sources).
func (w *argoWorld) createArgoApp(t *testing.T, annotations, source string) {
	t.Helper()
	createApp(t, w.ns, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %s
  annotations:
%s
spec:
  project: default
%s
  destination: {server: https://kubernetes.default.svc, namespace: %s}
  syncPolicy: {automated: {}}
`, w.app, annotations, source, w.dest))
}

// gitAnnotations are the annotations of a Git-mode Application updating
// team/web within 1.x, with extra lines appended.
func (w *argoWorld) gitAnnotations(extra ...string) string {
	lines := append([]string{
		"argocd-image-updater.argoproj.io/image-list: web=" + w.image + ":^1",
		"argocd-image-updater.argoproj.io/write-back-method: git:secret:" + w.ns + "/git-creds",
	}, extra...)
	return "    " + strings.Join(lines, "\n    ")
}

// runGit starts crowsnest in Git mode and returns main's head before it
// ran.
func (w *argoWorld) runGit(t *testing.T) (before string, d *daemon) {
	t.Helper()
	createSecret(t, w.ns, "git-creds", map[string]string{"username": "bot", "password": "s3cret-token", "url": w.git.URL})
	before = w.git.Head(t, "deploy", "main")
	return before, w.daemon(t)
}

// checkSyncedCommit checks that crowsnest's commit (the head of main, not
// before) changed only the file edited, and that Argo CD's app synced it
// and recorded it in its last history entry: status.sync.revision for one
// source, status.sync.revisions for many.
func (w *argoWorld) checkSyncedCommit(t *testing.T, app *unstructured.Unstructured, before, edited string) {
	t.Helper()
	head := w.git.Head(t, "deploy", "main")
	if head == before {
		t.Fatal("no commit on main")
	}
	if log := w.git.Log(t, "deploy", "main"); len(log) != 2 {
		t.Errorf("%d commits on main, want the seed and crowsnest's: %+v", len(log), log)
	}
	if changed := w.git.ChangedFiles(t, "deploy", head); !slices.Equal(changed, []string{edited}) {
		t.Errorf("crowsnest's commit changed %v, want only %s", changed, edited)
	}
	sources, _, _ := unstructured.NestedSlice(app.Object, "spec", "sources")
	history, _, _ := unstructured.NestedSlice(app.Object, "status", "history")
	var last map[string]any
	if len(history) > 0 {
		last, _ = history[len(history)-1].(map[string]any)
	}
	if len(sources) == 0 {
		if rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision"); rev != head {
			t.Errorf("status.sync.revision = %s, want crowsnest's commit %s", rev, head)
		}
		if rev, _, _ := unstructured.NestedString(last, "revision"); rev != head {
			t.Errorf("the last status.history entry deployed %q, want crowsnest's commit %s (history %v)", rev, head, history)
		}
		return
	}
	want := make([]string, len(sources))
	for i := range want {
		want[i] = head // every source is the one repository's main
	}
	if revs, _, _ := unstructured.NestedStringSlice(app.Object, "status", "sync", "revisions"); !slices.Equal(revs, want) {
		t.Errorf("status.sync.revisions = %v, want crowsnest's commit %s for each source", revs, head)
	}
	if revs, _, _ := unstructured.NestedStringSlice(last, "revisions"); !slices.Equal(revs, want) {
		t.Errorf("the last status.history entry deployed %v, want crowsnest's commit %s for each source (history %v)", revs, head, history)
	}
}

// checkOperation checks that Argo CD's last operation, a sync to
// crowsnest's commit, ended Succeeded.
func checkOperation(t *testing.T, app *unstructured.Unstructured) {
	t.Helper()
	if phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase"); phase != "Succeeded" {
		t.Errorf("Argo CD's last operation ended %q, want Succeeded", phase)
	}
}

// Git mode, kustomization target: crowsnest edits the images of the
// kustomization.yaml Argo CD renders, and Argo CD syncs that commit. With
// a path, the kustomization is another folder's: here the base an
// overlay (the Application's path) includes.
func TestE2EArgoCDGitKustomizationTarget(t *testing.T) {
	overlay := func(w *argoWorld) map[string]string {
		files := map[string]string{"envs/prod/kustomization.yaml": "resources: [../../base]\n"}
		for p, content := range kustomizeWebFiles(w) {
			files["base/"+strings.TrimPrefix(p, "web/")] = content
		}
		return files
	}
	for _, tc := range []struct {
		app, target, path, edited string
		files                     func(w *argoWorld) map[string]string
	}{
		{"web-kustomization", "kustomization", "web", "web/kustomization.yaml", kustomizeWebFiles},
		{"web-kustomization-base", "kustomization:../../base", "envs/prod", "base/kustomization.yaml", overlay},
	} {
		t.Run(tc.app, func(t *testing.T) {
			w := newArgoWorldFiles(t, tc.app, tc.files, argocdenv.Options{AppResync: argoCDWait})
			w.createArgoApp(t, w.gitAnnotations("argocd-image-updater.argoproj.io/write-back-target: "+tc.target),
				fmt.Sprintf("  source: {repoURL: %s, path: %s, targetRevision: main}", w.repoURL, tc.path))
			w.waitDeployed(t, w.image+":1.0.0")
			before, d := w.runGit(t)
			app := w.waitDeployed(t, w.image+":1.1.0")
			d.waitLog(t, `"msg":"images updated"`, `"method":"git"`)
			w.checkSyncedCommit(t, app, before, tc.edited)
			checkOperation(t, app)
			if typ, _, _ := unstructured.NestedString(app.Object, "status", "sourceType"); typ != "Kustomize" {
				t.Errorf("Argo CD rendered the source as %q, want Kustomize", typ)
			}
			kzn, _ := w.git.ReadFile(t, "deploy", "main", tc.edited)
			t.Logf("%s:\n%s", tc.edited, kzn)
		})
	}
}

// Git mode, Helm parameters in .argocd-source-<app>.yaml: Argo CD merges
// the file's helm.parameters into the chart's values.
func TestE2EArgoCDHelmGitParameters(t *testing.T) {
	w := newArgoWorldFiles(t, "web-helm-params", func(w *argoWorld) map[string]string {
		files := helmWebChart(w, "web")
		files["web/values-prod.yaml"] = helmValues(w)
		return files
	}, argocdenv.Options{AppResync: argoCDWait})
	w.createArgoApp(t, w.gitAnnotations(
		"argocd-image-updater.argoproj.io/web.helm.image-name: image.name",
		"argocd-image-updater.argoproj.io/web.helm.image-tag: image.tag"),
		fmt.Sprintf("  source: {repoURL: %s, path: web, targetRevision: main, helm: {valueFiles: [values-prod.yaml]}}", w.repoURL))
	w.waitDeployed(t, w.image+":1.0.0")
	before, d := w.runGit(t)
	app := w.waitDeployed(t, w.image+":1.1.0")
	d.waitLog(t, `"msg":"images updated"`, `"method":"git"`)
	w.checkSyncedCommit(t, app, before, "web/.argocd-source-"+w.app+".yaml")
	checkOperation(t, app)
	if typ, _, _ := unstructured.NestedString(app.Object, "status", "sourceType"); typ != "Helm" {
		t.Errorf("Argo CD rendered the source as %q, want Helm", typ)
	}
	if got, ok := w.git.ReadFile(t, "deploy", "main", "web/.argocd-source-"+w.app+".yaml"); !ok {
		t.Error("web/.argocd-source-<app>.yaml missing on main")
	} else {
		t.Logf(".argocd-source-<app>.yaml:\n%s", got)
	}
}

// Git mode, helmvalues target: crowsnest rewrites the values file the
// Application lists in helm.valueFiles, and Argo CD renders it.
func TestE2EArgoCDHelmGitValuesFile(t *testing.T) {
	w := newArgoWorldFiles(t, "web-helm-values", func(w *argoWorld) map[string]string {
		files := helmWebChart(w, "web")
		files["web/values-prod.yaml"] = helmValues(w)
		return files
	}, argocdenv.Options{AppResync: argoCDWait})
	w.createArgoApp(t, w.gitAnnotations(
		"argocd-image-updater.argoproj.io/web.helm.image-name: image.name",
		"argocd-image-updater.argoproj.io/web.helm.image-tag: image.tag",
		"argocd-image-updater.argoproj.io/write-back-target: helmvalues:values-prod.yaml"),
		fmt.Sprintf("  source: {repoURL: %s, path: web, targetRevision: main, helm: {valueFiles: [values-prod.yaml]}}", w.repoURL))
	w.waitDeployed(t, w.image+":1.0.0")
	before, d := w.runGit(t)
	app := w.waitDeployed(t, w.image+":1.1.0")
	d.waitLog(t, `"msg":"images updated"`, `"method":"git"`)
	w.checkSyncedCommit(t, app, before, "web/values-prod.yaml")
	checkOperation(t, app)
	got, _ := w.git.ReadFile(t, "deploy", "main", "web/values-prod.yaml")
	t.Logf("values-prod.yaml:\n%s", got)
}

// Kubernetes mode, Helm: crowsnest patches spec.source.helm.parameters and
// Argo CD renders the chart with them.
func TestE2EArgoCDHelmKubernetesMode(t *testing.T) {
	w := newArgoWorldFiles(t, "web-helm-kube", func(w *argoWorld) map[string]string {
		files := helmWebChart(w, "web")
		files["web/values-prod.yaml"] = helmValues(w)
		return files
	}, argocdenv.Options{})
	w.createArgoApp(t, "    argocd-image-updater.argoproj.io/image-list: web="+w.image+":^1\n"+
		"    argocd-image-updater.argoproj.io/web.helm.image-name: image.name\n"+
		"    argocd-image-updater.argoproj.io/web.helm.image-tag: image.tag",
		fmt.Sprintf("  source: {repoURL: %s, path: web, targetRevision: main, helm: {valueFiles: [values-prod.yaml]}}", w.repoURL))
	w.waitDeployed(t, w.image+":1.0.0")
	d := w.daemon(t)
	app := w.waitDeployed(t, w.image+":1.1.0")
	d.waitLog(t, `"msg":"images updated"`, `"method":"argocd"`)
	checkOperation(t, app)
	params, _, _ := unstructured.NestedSlice(app.Object, "spec", "source", "helm", "parameters")
	t.Logf("spec.source.helm.parameters: %v", params)
	// What Argo CD synced is the spec with crowsnest's parameters.
	synced, _, _ := unstructured.NestedSlice(app.Object, "status", "sync", "comparedTo", "source", "helm", "parameters")
	if fmt.Sprint(synced) != fmt.Sprint(params) || len(params) == 0 {
		t.Errorf("Argo CD compared with helm.parameters %v, want the spec's %v", synced, params)
	}
}

// A multi-source Application: the chart from one source, its values from
// a `ref: values` source through $values/...; crowsnest writes the values
// file of the ref source (helmvalues:$values/<path>) and Argo CD renders
// the chart with it.
func TestE2EArgoCDMultiSourceValuesRef(t *testing.T) {
	w := newArgoWorldFiles(t, "web-multi", func(w *argoWorld) map[string]string {
		files := helmWebChart(w, "chart")
		files["envs/prod/values.yaml"] = helmValues(w)
		return files
	}, argocdenv.Options{AppResync: argoCDWait})
	w.createArgoApp(t, w.gitAnnotations(
		"argocd-image-updater.argoproj.io/web.helm.image-name: image.name",
		"argocd-image-updater.argoproj.io/web.helm.image-tag: image.tag",
		"argocd-image-updater.argoproj.io/write-back-target: helmvalues:$values/envs/prod/values.yaml"),
		fmt.Sprintf(`  sources:
  - {repoURL: %[1]s, path: chart, targetRevision: main, helm: {valueFiles: [$values/envs/prod/values.yaml]}}
  - {repoURL: %[1]s, targetRevision: main, ref: values}`, w.repoURL))
	w.waitDeployed(t, w.image+":1.0.0")
	before, d := w.runGit(t)
	app := w.waitDeployed(t, w.image+":1.1.0")
	d.waitLog(t, `"msg":"images updated"`, `"method":"git"`)
	w.checkSyncedCommit(t, app, before, "envs/prod/values.yaml")
	checkOperation(t, app)
	// One source type per spec.sources entry, the ref-only one included (as ""):
	// crowsnest reads the tool of sources[i] at sourceTypes[i].
	if types, _, _ := unstructured.NestedStringSlice(app.Object, "status", "sourceTypes"); len(types) != 2 || types[0] != "Helm" {
		t.Errorf("status.sourceTypes = %v, want Helm for the chart and one entry for the ref source", types)
	} else {
		t.Logf("status.sourceTypes: %v", types)
	}
	got, _ := w.git.ReadFile(t, "deploy", "main", "envs/prod/values.yaml")
	t.Logf("envs/prod/values.yaml:\n%s", got)
}

// A multi-source Application in Kubernetes mode: crowsnest patches the
// chart source's helm.parameters (spec.sources[0]), which Argo CD lays
// over the $values file.
func TestE2EArgoCDMultiSourceKubernetesMode(t *testing.T) {
	w := newArgoWorldFiles(t, "web-multi-kube", func(w *argoWorld) map[string]string {
		files := helmWebChart(w, "chart")
		files["envs/prod/values.yaml"] = helmValues(w)
		return files
	}, argocdenv.Options{})
	w.createArgoApp(t, "    argocd-image-updater.argoproj.io/image-list: web="+w.image+":^1\n"+
		"    argocd-image-updater.argoproj.io/web.helm.image-name: image.name\n"+
		"    argocd-image-updater.argoproj.io/web.helm.image-tag: image.tag",
		fmt.Sprintf(`  sources:
  - {repoURL: %[1]s, path: chart, targetRevision: main, helm: {valueFiles: [$values/envs/prod/values.yaml]}}
  - {repoURL: %[1]s, targetRevision: main, ref: values}`, w.repoURL))
	w.waitDeployed(t, w.image+":1.0.0")
	d := w.daemon(t)
	app := w.waitDeployed(t, w.image+":1.1.0")
	d.waitLog(t, `"msg":"images updated"`, `"method":"argocd"`)
	checkOperation(t, app)
	params := firstSourceParameters(app, "spec", "sources")
	t.Logf("spec.sources[0].helm.parameters: %v", params)
	synced := firstSourceParameters(app, "status", "sync", "comparedTo", "sources")
	if fmt.Sprint(synced) != fmt.Sprint(params) || len(params) == 0 {
		t.Errorf("Argo CD compared sources[0] with helm.parameters %v, want the spec's %v", synced, params)
	}
	if got, _ := w.git.ReadFile(t, "deploy", "main", "envs/prod/values.yaml"); got != helmValues(w) {
		t.Errorf("the values file changed in Kubernetes mode:\n%s", got)
	}
}

// firstSourceParameters is helm.parameters of the first source in the
// list of sources at fields.
func firstSourceParameters(app *unstructured.Unstructured, fields ...string) []any {
	sources, _, _ := unstructured.NestedSlice(app.Object, fields...)
	if len(sources) == 0 {
		return nil
	}
	src, _ := sources[0].(map[string]any)
	params, _, _ := unstructured.NestedSlice(src, "helm", "parameters")
	return params
}

// A Helm chart from a Git path, with no helm block in the spec and no
// helm annotations: only Argo CD knows it is Helm (status.sourceType), and
// as argocd-image-updater does, crowsnest sets the default parameters
// image.name and image.tag. Overrides of the wrong tool would break the
// render: a kustomize block makes Argo CD run kustomize on the chart.
func TestE2EArgoCDHelmDetectedByArgoCD(t *testing.T) {
	w := newArgoWorldFiles(t, "web-helm-detected", func(w *argoWorld) map[string]string {
		files := helmWebChart(w, "web")
		files["web/values.yaml"] = helmValues(w)
		return files
	}, argocdenv.Options{})
	w.createArgoApp(t, "    argocd-image-updater.argoproj.io/image-list: web="+w.image+":^1",
		fmt.Sprintf("  source: {repoURL: %s, path: web, targetRevision: main}", w.repoURL))
	w.waitDeployed(t, w.image+":1.0.0")
	d := w.daemon(t)
	app := w.waitDeployed(t, w.image+":1.1.0")
	d.waitLog(t, `"msg":"images updated"`, `"method":"argocd"`)
	checkOperation(t, app)
	if typ, _, _ := unstructured.NestedString(app.Object, "status", "sourceType"); typ != "Helm" {
		t.Errorf("Argo CD rendered the source as %q, want Helm", typ)
	}
	params, _, _ := unstructured.NestedSlice(app.Object, "spec", "source", "helm", "parameters")
	t.Logf("spec.source.helm.parameters: %v", params)
	if k, ok, _ := unstructured.NestedMap(app.Object, "spec", "source", "kustomize"); ok {
		t.Errorf("crowsnest wrote kustomize overrides %v on a Helm source", k)
	}
	synced, _, _ := unstructured.NestedSlice(app.Object, "status", "sync", "comparedTo", "source", "helm", "parameters")
	if fmt.Sprint(synced) != fmt.Sprint(params) || len(params) == 0 {
		t.Errorf("Argo CD compared with helm.parameters %v, want the spec's %v", synced, params)
	}
}
