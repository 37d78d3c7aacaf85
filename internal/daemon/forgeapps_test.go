package daemon

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/githubapp/githubapptest"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// The Git writer lends the GitHub App of the notifications in force: the
// notifications' setup hands it each config the notifier puts in force
// (the one at start, each reload), and none it rejects.
func TestGitWriterFollowsTheNotificationsInForce(t *testing.T) {
	_, appKey := githubapptest.Key(t)
	parse := func(t *testing.T, body string) *config.Config {
		t.Helper()
		c, err := config.Parse([]byte("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\n" + body))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	withApp := parse(t, "git:\n  forges:\n    github.com: {useNotificationsGitHubApp: true}\nnotifications:\n  services:\n    github:\n      github:\n"+
		"        appID: 1\n        installationID: 2\n        privateKey: |\n          "+strings.ReplaceAll(strings.TrimSpace(appKey), "\n", "\n          ")+"\n")
	withoutApp := parse(t, "notifications:\n  services:\n    hook:\n      webhook: {url: https://hooks.example.com/x}\n")
	broken := parse(t, "notifications:\n  services:\n    bad:\n      github: {appID: 1, installationID: 2, privateKey: not-a-key}\n")

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var apps setup.NotificationApps
	w, err := setup.NewGitWriter(withApp, filepath.Join(t.TempDir(), "cache"), nil, nil, log, &apps)
	if err != nil {
		t.Fatal(err)
	}
	lent := func() error {
		_, _, err := w.Forges.Forge(gitwb.ForgeRequest{RepoURL: "git@github.com:team/apps.git"})
		return err
	}
	noApp := "git.forges[github.com].useNotificationsGitHubApp: no notifications github service with a GitHub App"

	n, _, err := NewNotifications(t.Context(), withApp, nil, "crowsnest", false, prometheus.NewRegistry(), log, &apps)
	if err != nil {
		t.Fatal(err)
	}
	if err := lent(); err != nil {
		t.Fatalf("forge with the notifications at start: %v", err)
	}
	if err := n.Apply(withoutApp); err != nil {
		t.Fatal(err)
	}
	if err := lent(); err == nil || !strings.Contains(err.Error(), noApp) {
		t.Fatalf("forge after a reload without the app: %v, want %q", err, noApp)
	}
	if err := n.Apply(broken); err == nil {
		t.Fatal("a service with a broken key was put in force")
	}
	if err := lent(); err == nil || !strings.Contains(err.Error(), noApp) {
		t.Fatalf("forge after a rejected reload: %v, want the notifications in force still (%q)", err, noApp)
	}
	if err := n.Apply(withApp); err != nil {
		t.Fatal(err)
	}
	if err := lent(); err != nil {
		t.Fatalf("forge after the app came back: %v", err)
	}
}
