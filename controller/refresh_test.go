package controller_test

import (
	"context"
	"log/slog"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testwait"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// After a push, each Application written is asked to refresh (Argo CD's
// annotation, in the configured mode), so Argo CD deploys the commit now
// rather than at its next poll; "none" asks nothing; an Application whose
// write failed is not asked.
func TestGitBatchAsksArgoCDToRefreshWhatItWrote(t *testing.T) {
	for _, mode := range []string{config.GitRefreshNormal, config.GitRefreshHard, config.GitRefreshNone} {
		t.Run(mode, func(t *testing.T) {
			ns := env.CreateNamespace(t, "refresh")
			createApp(t, ns, "good")
			createApp(t, ns, "bad")
			refresher := &kube.Refresher{Client: dynClient(t), Mode: fixedMode(mode)}
			b := &collect.Batcher{Writer: twoRepoWriter{}}
			images := &controller.ImageReconciler{Git: b, Refresher: refresher, Events: &appEvents{},
				Queue: appLookup(), Log: slog.New(slog.DiscardHandler)}
			b.Add(ns+"/good", gitwb.Change{App: "good", RepoURL: "http://git/ok.git"})
			b.Add(ns+"/bad", gitwb.Change{App: "bad", RepoURL: "http://git/bad.git"})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- images.RunGit(ctx) }()
			// Idle once the batch is settled, refreshes included.
			testwait.For(t, "the batch to be written and reported", b.Idle)
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"good": mode, "bad": ""}
			if mode == config.GitRefreshNone {
				want["good"] = ""
			}
			for name, w := range want {
				app, err := apps(t).Namespace(ns).Get(t.Context(), name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got := app.GetAnnotations()[kube.RefreshAnnotation]; got != w {
					t.Errorf("%s: refresh annotation %q, want %q", name, got, w)
				}
			}
		})
	}
}

// fixedMode is a kube.Mode that never changes.
type fixedMode string

func (m fixedMode) RefreshMode() string { return string(m) }
