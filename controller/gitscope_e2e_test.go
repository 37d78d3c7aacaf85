package controller_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/tenancy"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

// intruderDoc is team-b's Application (source team-b/prod) whose
// annotations aim its write-back at team-a's overlay in the shared
// repository, with kustomize.image-name naming team-a's image so that
// newName would point team-a's deployment at team-b's image.
func intruderDoc(ns, image, victimImage, repoURL string) string {
	return fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
  namespace: %[1]s
  annotations:
    argocd-image-updater.argoproj.io/image-list: web=%[2]s:^1
    argocd-image-updater.argoproj.io/web.kustomize.image-name: %[3]s
    argocd-image-updater.argoproj.io/write-back-method: git
    argocd-image-updater.argoproj.io/write-back-target: kustomization:/team-a/prod
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: web}
  source: {repoURL: %[4]q, path: team-b/prod, targetRevision: main}
`, ns, image, victimImage, repoURL)
}

// team-b's Application with write-back-target kustomization:/team-a/prod
// is refused: a WriteBackRefused Event naming team-a's file and the rule,
// the refused count, no retry, team-a's file unchanged in the repository,
// while team-a's own update in the same batch is committed. With
// tenancy.writePaths opening team-a/prod to team-b's namespace, the
// operator's word, the same write goes through.
func TestGitWriteOutsideWhatTheApplicationRendersFrom(t *testing.T) {
	for _, widened := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "widened by tenancy.writePaths"}[widened], func(t *testing.T) {
			reg, imageA := appRegistry(t)
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			reg.Push(t, "team-b/app:1.0.0", testreg.Image(t, t0, "linux/amd64"))
			reg.Push(t, "team-b/app:1.1.0", testreg.Image(t, t0.Add(time.Hour), "linux/amd64"))
			imageB := reg.Host() + "/team-b/app"
			srv := testgit.Start(t, testgit.Options{})
			repo := srv.CreateRepo(t, "apps")
			victim := kustomizationOf(imageA, "1.0.0")
			srv.Seed(t, "apps", "main", map[string]string{
				"team-a/prod/kustomization.yaml":    victim,
				"team-a/staging/kustomization.yaml": kustomizationOf(imageA, "1.0.0"),
				"team-b/prod/kustomization.yaml":    kustomizationOf(imageB, "1.0.0"),
			}, "seed")

			nsA, nsB := env.CreateNamespace(t, "team-a"), env.CreateNamespace(t, "team-b")
			a := gitRequest(t, nsA, gitAppDoc("web", nsA, imageA, repo, "team-a/staging", "main"), imageA)
			b := gitRequest(t, nsB, intruderDoc(nsB, imageB, imageA, repo), imageB)

			events, retries := &appEvents{}, &retryLog{}
			promReg := prometheus.NewRegistry()
			metrics := controller.NewImageMetrics(promReg)
			log := slog.New(slog.DiscardHandler)
			rules := &tenancy.Rules{Config: func() *config.Tenancy {
				if !widened {
					return nil
				}
				return &config.Tenancy{WritePaths: []config.TenancyWritePath{{Namespaces: []string{nsB}, Paths: []string{"/team-a/prod/**"}}}}
			}}
			images := &controller.ImageReconciler{Registry: &registry.Client{}, Events: events, Queue: appsRetrying(retries, a, b),
				Metrics: metrics, Log: log, Tenancy: rules}
			images.Git = &collect.Batcher{Writer: testGitWriter(t)}
			runBatch(t, images, a, b)

			staging, _ := srv.ReadFile(t, "apps", "main", "team-a/staging/kustomization.yaml")
			if !strings.Contains(staging, "newTag: 1.1.0") {
				t.Errorf("team-a's own update was not committed:\n%s", staging)
			}
			got, _ := srv.ReadFile(t, "apps", "main", "team-a/prod/kustomization.yaml")
			refused := counter(t, promReg, "crowsnest_image_updates_total", map[string]string{"method": "git", "result": "refused"})
			evs := events.of(b.Key)
			if widened {
				if !strings.Contains(got, "newName: "+imageB) || len(evs) != 1 || evs[0].Reason != controller.EventImagesUpdated || refused != 0 {
					t.Errorf("the operator's writePaths did not let the write through: Events %+v, refused %v, file:\n%s", evs, refused, got)
				}
				return
			}
			if diff := cmp.Diff(victim, got); diff != "" {
				t.Errorf("team-a/prod/kustomization.yaml changed (-before +after):\n%s", diff)
			}
			if len(evs) != 1 || evs[0].Type != corev1.EventTypeWarning || evs[0].Reason != controller.EventWriteBackRefused ||
				!strings.Contains(evs[0].Message, "write outside what the Application renders from: team-a/prod/kustomization.yaml (rule: ") ||
				!strings.Contains(evs[0].Message, "tenancy.writePaths") {
				t.Errorf("Events of %s: %+v; want one WriteBackRefused naming team-a/prod/kustomization.yaml and the rule", b.Key, evs)
			}
			if refused != 1 {
				t.Errorf("crowsnest_image_updates_total{result=refused} = %v, want 1", refused)
			}
			if r := retries.list(); len(r) != 0 {
				t.Errorf("retried %q, want nothing: retrying cannot change the answer", r)
			}
		})
	}
}

// The dry run applies the same rule: team-b's plan carries the refusal
// naming team-a's file, with a WriteBackRefused Event, and nothing is
// pushed.
func TestDryRunRefusesAWriteOutsideWhatTheApplicationRendersFrom(t *testing.T) {
	reg, imageA := appRegistry(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reg.Push(t, "team-b/app:1.0.0", testreg.Image(t, t0, "linux/amd64"))
	reg.Push(t, "team-b/app:1.1.0", testreg.Image(t, t0.Add(time.Hour), "linux/amd64"))
	imageB := reg.Host() + "/team-b/app"
	srv := testgit.Start(t, testgit.Options{})
	repo := srv.CreateRepo(t, "apps")
	seed := srv.Seed(t, "apps", "main", map[string]string{
		"team-a/prod/kustomization.yaml": kustomizationOf(imageA, "1.0.0"),
		"team-b/prod/kustomization.yaml": kustomizationOf(imageB, "1.0.0"),
	}, "seed")
	nsB := env.CreateNamespace(t, "team-b")
	b := gitRequest(t, nsB, intruderDoc(nsB, imageB, imageA, repo), imageB)

	events, plans := &appEvents{}, &planLog{}
	log := slog.New(slog.DiscardHandler)
	images := &controller.ImageReconciler{Registry: &registry.Client{}, Events: events, Queue: appLookup(b),
		DryRun: true, Plans: plans, Log: log}
	images.Git = &collect.Batcher{Writer: testGitWriter(t)}
	if _, err := images.Reconcile(t.Context(), b); err != nil {
		t.Fatalf("reconciling %s: %v", b.Key, err)
	}
	p, ok := plans.get(b.Key)
	if !ok || !strings.Contains(p.Error, "write outside what the Application renders from: team-a/prod/kustomization.yaml (rule: ") {
		t.Errorf("plan %+v; want the refusal naming team-a/prod/kustomization.yaml", p)
	}
	if ok && len(p.Git) == 1 && len(p.Git[0].Files) != 0 {
		t.Errorf("planned files %+v, want none", p.Git[0].Files)
	}
	evs := events.of(b.Key)
	if len(evs) != 1 || evs[0].Reason != controller.EventWriteBackRefused || !strings.Contains(evs[0].Message, "team-a/prod/kustomization.yaml") {
		t.Errorf("Events of %s: %+v; want one WriteBackRefused naming the file", b.Key, evs)
	}
	if head := srv.Head(t, "apps", "main"); head != seed {
		t.Errorf("main moved from %s to %s under the dry run", seed, head)
	}
}
