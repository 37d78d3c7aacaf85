package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// A registry that lists hostile tag names ("../x", newlines, YAML and JSON
// metacharacters, 1 KB names), all sorting above the real tags, next to
// real images: with the alphabetical strategy, which would pick any of
// them, the daemon writes the best valid tag to Git (a kustomization that
// stays valid YAML with only newTag changed) and to an Application's
// patch, and `crowsnest test` lists each hostile tag as not a valid OCI
// tag.
func TestE2EHostileTagsNeverReachWriteBack(t *testing.T) {
	hostile := []string{"zz/../../x", "../x", "zz\nimages: []", "zz: {a: b}", `zz"},{"op":"remove","path":"/spec"}`,
		"zz#c", "zz'q", "zz ${HOME}", strings.Repeat("z", 1024), "zz\u2028", ".zz", "-zz"}
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	image := pushTags(t, reg, "team/web", "build-1", "build-2")
	reg.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/team/web/tags/list") {
			return false
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"name": "team/web", "tags": append([]string{"build-1", "build-2"}, hostile...)})
		return true
	})

	gitSrv := testgit.Start(t, testgit.Options{})
	gitSrv.CreateRepo(t, "deploy")
	kustomization := "images:\n- name: " + image + "\n  newTag: build-1 # managed\n"
	before := gitSrv.Seed(t, "deploy", "main", map[string]string{"apps/web/kustomization.yaml": kustomization}, "initial")

	kubeconfig, ns, dir := e2eCluster(t, "e2e-hostile")
	cfgPath := filepath.Join(dir, "crowsnest.yaml")
	// crowsnest keeps its state in the namespace of its Lease.
	writeFile(t, cfgPath, "apiVersion: crowsnest.dev/v1alpha1\nkind: Config\nleaderElection: {leaseNamespace: "+ns+"}\n")
	d := startDaemon(t, "--kubeconfig", kubeconfig, "--config", cfgPath, "--namespace", ns, "--log-format", "json", "--metrics-bind-address", "0",
		"--health-probe-bind-address", "0", "--webhook-bind-address", "0", "--git-cache-dir", filepath.Join(dir, "git"))
	d.waitLog(t, `"msg":"engine caches synced"`)
	strategy := "    argocd-image-updater.argoproj.io/app.update-strategy: alphabetical"
	secretApp(t, ns, "git", gitSrv.RepoURL("deploy"), image, strategy+
		"\n    argocd-image-updater.argoproj.io/write-back-method: git\n    argocd-image-updater.argoproj.io/write-back-target: kustomization")
	secretApp(t, ns, "kube", "https://git.example.com/kube.git", image, strategy)

	waitFor(t, "a commit", func() bool { return gitSrv.Head(t, "deploy", "main") != before })
	got, _ := gitSrv.ReadFile(t, "deploy", "main", "apps/web/kustomization.yaml")
	if want := strings.Replace(kustomization, "build-1", "build-2", 1); got != want {
		t.Errorf("kustomization.yaml:\n%s\nwant:\n%s", got, want)
	}
	var parsed map[string]any
	if err := yaml.Unmarshal([]byte(got), &parsed); err != nil {
		t.Errorf("kustomization.yaml is not YAML: %v", err)
	}
	waitFor(t, "the Application patched", func() bool {
		imgs := kustomizeImages(t, ns, "kube")
		return len(imgs) == 1 && imgs[0] == image+":build-2"
	})
	d.waitLog(t, `"msg":"images updated"`, `"app":"`+ns+`/kube"`)

	out, errOut, code := runTest(t, nil, image, "--strategy", "alphabetical", "-o", "json")
	if code != 0 {
		t.Fatalf("crowsnest test: exit %d\n%s", code, errOut)
	}
	var report struct {
		Selected   string `json:"selected"`
		Candidates []struct{ Tag, Reason string }
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("crowsnest test output: %v\n%s", err, out)
	}
	invalid := map[string]bool{}
	for _, c := range report.Candidates {
		if c.Reason == "not a valid OCI tag" {
			invalid[c.Tag] = true
		}
	}
	for _, h := range hostile {
		if !invalid[h] {
			t.Errorf("crowsnest test does not list %q as not a valid OCI tag:\n%s", h, out)
		}
	}
	if report.Selected != "build-2" {
		t.Errorf("crowsnest test selects %q, want build-2", report.Selected)
	}
}
