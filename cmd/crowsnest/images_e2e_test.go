package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// An Application annotated for argocd-image-updater, running an old tag:
// crowsnest patches it to the newest allowed tag (Kubernetes mode), records
// an Event, then follows a tag pushed later; a malformed annotation on
// another Application is an Event naming the key and breaks nothing.
func TestE2EImageUpdateKubernetesMode(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	image := pushTags(t, reg, "team/web", "1.0.0", "1.1.0", "2.0.0")
	kubeconfig, ns, dir := e2eCluster(t, "e2e-img")
	cfgPath := filepath.Join(dir, "crowsnest.yaml")
	writeFile(t, cfgPath, fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
registries:
  pollInterval: 5s
imagePolicies:
  - name: auto
    match: {labelSelector: crowsnest.dev/auto=true}
    images: [{image: %s, constraint: "~1"}]
`, image))

	apps := appsIn(ns)
	// create reads status from doc, as Argo CD reports it in the
	// Application's status.
	create := func(doc string) {
		t.Helper()
		var obj struct {
			Status struct {
				Summary struct{ Images []string } `json:"summary"`
			} `json:"status"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		createApp(t, ns, doc, obj.Status.Summary.Images...)
	}
	create(fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  annotations:
    argocd-image-updater.argoproj.io/image-list: web=%[1]s:~1
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source:
    repoURL: https://git.example.com/web.git
    path: deploy
    kustomize: {namePrefix: prod-}
status:
  summary: {images: ["%[1]s:1.0.0", "redis:7.2"]}
`, image))
	create(fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: broken
  annotations:
    # The unknown strategy is reported and semver used, as in
    # argocd-image-updater; ~1.0 keeps it at 1.0.0, so the updates counted
    # below are web's and policied's.
    argocd-image-updater.argoproj.io/image-list: web=%[1]s:~1.0
    argocd-image-updater.argoproj.io/web.update-strategy: newest
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: {repoURL: https://git.example.com/web.git, path: deploy}
status:
  summary: {images: ["%[1]s:1.0.0"]}
`, image))

	// No annotations: crowsnest's image policy selects it by label.
	create(fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: policied
  labels: {crowsnest.dev/auto: "true"}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: {repoURL: https://git.example.com/web.git, path: deploy}
status:
  summary: {images: ["%[1]s:1.0.0"]}
`, image))

	metricsAddr := freeAddr(t)
	startDaemon(t, "--kubeconfig", kubeconfig, "--config", cfgPath, "--namespace", ns,
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", "0", "--log-format", "json")

	waitFor(t, "web to be patched to 1.1.0", func() bool {
		images := kustomizeImages(t, ns, "web")
		return len(images) == 1 && images[0] == image+":1.1.0"
	})
	waitFor(t, "the policy-matched Application to be patched to 1.1.0", func() bool {
		u, err := apps.Get(t.Context(), "policied", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		images, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "source", "kustomize", "images")
		return len(images) == 1 && images[0] == image+":1.1.0"
	})
	u, err := apps.Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if prefix, _, _ := unstructured.NestedString(u.Object, "spec", "source", "kustomize", "namePrefix"); prefix != "prod-" {
		t.Errorf("namePrefix = %q: a field crowsnest does not own was lost", prefix)
	}

	cs := kubernetes.NewForConfigOrDie(env.Config)
	events := func() []corev1.Event {
		list, err := cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	hasEvent := func(obj, reason, text string) bool {
		for _, e := range events() {
			if e.InvolvedObject.Name == obj && e.Reason == reason && strings.Contains(e.Message, text) {
				return true
			}
		}
		return false
	}
	waitFor(t, "an ImagesUpdated Event on web", func() bool {
		return hasEvent("web", "ImagesUpdated", image+": 1.0.0 -> 1.1.0")
	})
	waitFor(t, "an InvalidAnnotation Event on broken naming the key", func() bool {
		return hasEvent("broken", "InvalidAnnotation", "argocd-image-updater.argoproj.io/web.update-strategy")
	})

	// A newer allowed tag arrives: the poller sees it and web follows.
	reg.Push(t, "team/web:1.2.0", testreg.Image(t, time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC), "linux/amd64"))
	waitFor(t, "web to follow the pushed 1.2.0", func() bool {
		images := kustomizeImages(t, ns, "web")
		return len(images) == 1 && images[0] == image+":1.2.0"
	})
	waitFor(t, "the metrics to count both updates and the bad annotation", func() bool {
		_, body := httpGet(t.Context(), "http://"+metricsAddr+"/metrics")
		return strings.Contains(body, `crowsnest_image_updates_total{method="argocd",result="success"} 4`) &&
			strings.Contains(body, `crowsnest_invalid_annotations_total{key="update-strategy"}`) &&
			strings.Contains(body, `crowsnest_registry_polls_total`)
	})
	if code, _ := httpGet(t.Context(), "http://"+metricsAddr+"/metrics"); code != http.StatusOK {
		t.Errorf("/metrics = %d", code)
	}
}

// Images in a private registry, reachable only with the credentials their
// pull-secret annotation names (a Kubernetes Secret): crowsnest lists them
// with those and updates the Application; later pushes are found by the
// poller with the same credentials (the resync is off, so nothing else
// could find them): a newer semver tag, and a new digest of the mutable
// tag the digest strategy tracks. The password never shows.
func TestE2EImagePullSecret(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBasic, Username: "robot", Password: "pull-s3cret"})
	image := pushTags(t, reg, "team/private", "1.0.0", "1.3.0")
	pinned := reg.Host() + "/team/pinned"
	pushPinned := func(created time.Time) string {
		t.Helper()
		img := testreg.Image(t, created, "linux/amd64")
		reg.Push(t, "team/pinned:stable", img)
		dg, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return dg.String()
	}
	firstDigest := pushPinned(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	kubeconfig, ns, dir := e2eCluster(t, "e2e-pull")
	cfgPath := filepath.Join(dir, "crowsnest.yaml")
	writeFile(t, cfgPath, `apiVersion: crowsnest.dev/v1alpha1
kind: Config
watch: {resyncPeriod: 0s}
registries: {pollInterval: 5s}
`)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcreds"},
		Data:       map[string][]byte{"creds": []byte("robot:pull-s3cret"), "url": []byte(reg.Host())},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createApp(t, ns, annotatedApp("private", fmt.Sprintf(
		"    argocd-image-updater.argoproj.io/image-list: p=%[1]s,d=%[2]s:stable\n"+
			"    argocd-image-updater.argoproj.io/p.pull-secret: secret:%[3]s/regcreds#creds\n"+
			"    argocd-image-updater.argoproj.io/d.pull-secret: secret:%[3]s/regcreds#creds\n"+
			"    argocd-image-updater.argoproj.io/d.update-strategy: digest",
		image, pinned, ns)), image+":1.0.0", pinned+":stable")
	d := startDaemon(t, "--kubeconfig", kubeconfig, "--config", cfgPath, "--namespace", ns, "--metrics-bind-address", "0",
		"--health-probe-bind-address", "0", "--log-format", "json")
	want := func(tag, digest string) []string {
		return []string{pinned + ":stable@" + digest, image + ":" + tag} // sorted
	}
	first := want("1.3.0", firstDigest)
	waitFor(t, fmt.Sprintf("the private images to be updated to %v", first), func() bool {
		got := kustomizeImages(t, ns, "private")
		slices.Sort(got)
		return slices.Equal(got, first)
	})

	reg.Push(t, "team/private:1.4.0", testreg.Image(t, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), "linux/amd64"))
	second := want("1.4.0", pushPinned(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)))
	if slices.Equal(first, second) {
		t.Fatal("the re-pushed tag kept its digest")
	}
	waitFor(t, fmt.Sprintf("the poller to find %v", second), func() bool {
		got := kustomizeImages(t, ns, "private")
		slices.Sort(got)
		return slices.Equal(got, second)
	})
	for _, l := range d.lines() {
		if strings.Contains(l, "pull-s3cret") {
			t.Fatalf("the registry password appears in the log: %s", l)
		}
	}
}
