package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// ImageUpdater resources read as argocd-image-updater reads them, for each
// class where crowsnest used to differ, on the real apiserver with
// argocd-image-updater's own CRD: a constraint with spaces, ',' or "||";
// an unknown updateStrategy (semver, with a warning); several
// ImageUpdaters selecting one Application (each one's images updated, and
// a third one's other write-back named in its status); a kustomize name
// the live image still carries (the override is appended); and a
// useAnnotations ref whose Application has no image-list (passed on to
// the next ref).
func TestE2EImageUpdaterFidelity(t *testing.T) {
	kubeconfig, ns, _ := e2eCluster(t, "e2e-iu-fid")
	installImageUpdaterCRD(t)
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	con := pushTags(t, reg, "team/con", "1.0.0", "1.0.4", "1.0.5", "1.0.7", "1.0.9", "2.0.0")
	web := pushTags(t, reg, "team/web", "1.0.0", "1.1.0")
	api := pushTags(t, reg, "team/api", "1.0.0", "1.2.0")

	app := func(name string, running ...string) {
		createApp(t, ns, fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s}
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: {repoURL: https://git.example.com/web.git, path: deploy, kustomize: {}}
`, name), running...)
	}
	for _, n := range []string{"range", "comma", "or", "strategy"} {
		app(n, con+":1.0.0")
	}
	app("multi", web+":1.0.0", api+":1.0.0")
	app("renamed", "nginx:1.0.0")
	app("legacy-empty", api+":1.0.0")

	createImageUpdater(t, ns, fmt.Sprintf(`
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata: {name: a-main}
spec:
  applicationRefs:
  - namePattern: range
    images: [{alias: con, imageName: "%[1]s:>=1.0.3 <1.0.8"}]
  - namePattern: comma
    images: [{alias: con, imageName: "%[1]s:>=1.0, <1.0.6"}]
  - namePattern: or
    images: [{alias: con, imageName: "%[1]s:1.0.4 || 1.0.0"}]
  - namePattern: strategy
    images: [{alias: con, imageName: "%[1]s", commonUpdateSettings: {updateStrategy: newest}}]
  - namePattern: multi
    images: [{alias: app, imageName: "%[2]s:^1"}]
  - namePattern: renamed
    images: [{alias: web, imageName: "%[2]s:^1", manifestTargets: {kustomize: {name: nginx}}}]
  - namePattern: legacy-empty
    useAnnotations: true
  - namePattern: "legacy-*"
    images: [{alias: api, imageName: "%[3]s:^1"}]
`, con, web, api))
	createImageUpdater(t, ns, fmt.Sprintf(`
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata: {name: b-api}
spec:
  applicationRefs:
  - namePattern: multi
    images: [{alias: app, imageName: "%s:^1"}]
`, api))
	createImageUpdater(t, ns, fmt.Sprintf(`
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata: {name: c-git}
spec:
  writeBackConfig: {method: git}
  applicationRefs:
  - namePattern: multi
    images: [{alias: tools, imageName: "%s:^1"}]
`, con))

	createProject(t, ns, "default", []any{"*"}, []any{ns})
	d := startDaemon(t, "--kubeconfig", kubeconfig, "--namespace", ns, "--argocd-namespace", ns,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-format", "json")

	sorted := func(s []string) []string { return slices.Sorted(slices.Values(s)) }
	for name, want := range map[string][]string{
		"range":        {con + ":1.0.7"},
		"comma":        {con + ":1.0.5"},
		"or":           {con + ":1.0.4"},
		"strategy":     {con + ":2.0.0"},
		"multi":        sorted([]string{web + ":1.1.0", api + ":1.2.0"}),
		"renamed":      {"nginx=" + web + ":1.1.0"},
		"legacy-empty": {api + ":1.2.0"},
	} {
		waitFor(t, name+" written as argocd-image-updater writes it", func() bool {
			return cmp.Equal(want, sorted(kustomizeImages(t, ns, name)))
		})
	}
	// The unknown strategy is said, naming its field.
	d.waitLog(t, `"msg":"invalid ImageUpdater field"`, `spec.applicationRefs[3].images[0].commonUpdateSettings.updateStrategy`, `semver is used`)
	// Each resource selecting multi counts it; c-git's other write-back
	// is named in its status, and its image was not written.
	waitFor(t, "the three resources' status", func() bool {
		b, c := imageUpdaterStatus(t, ns, "b-api"), imageUpdaterStatus(t, ns, "c-git")
		errCond := condition(c, "Error")
		msg, _ := errCond["message"].(string)
		return b["applicationsMatched"] == int64(1) && c["applicationsMatched"] == int64(1) && errCond != nil &&
			strings.Contains(msg, "spec.writeBackConfig.method: ImageUpdater "+ns+"/a-main also selects this Application, with another write-back")
	})
	for _, img := range kustomizeImages(t, ns, "multi") {
		if strings.HasPrefix(img, con) {
			t.Errorf("c-git's image was written with a-main's write-back: %v", img)
		}
	}
}
