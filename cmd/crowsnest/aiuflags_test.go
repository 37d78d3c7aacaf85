package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// argocd-image-updater's run flags work on crowsnest run: aliases set what
// crowsnest's own flags and fields set, the flags with no counterpart are
// reported once with what to use instead, and an alias given together
// with crowsnest's own flag is refused.
func TestRunAcceptsArgoCDImageUpdaterFlags(t *testing.T) {
	dir := t.TempDir()
	apps := t.TempDir()
	// An Application crowsnest does not manage: seeing it is a debug line.
	writeFile(t, filepath.Join(apps, "plain.yaml"), `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: plain, namespace: argocd}
spec:
  project: default
  source: {repoURL: https://git.example.com/plain.git, path: .}
  destination: {server: https://kubernetes.default.svc, namespace: plain}
`)
	// A registries.conf with an error proves the alias's path is read.
	conf := filepath.Join(dir, "registries.conf")
	writeFile(t, conf, "registries:\n- name: broken\n  api_url: https://registry.example.com\n  prefix: registry.example.com\n  credentials: bogus:value\n")
	run := func(args ...string) (string, error) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), binary, append([]string{"run", "--apps-dir", apps, "--once",
			"--git-cache-dir", filepath.Join(dir, "git")}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run("--loglevel", "trace", "--logformat", "json", "--max-concurrent-apps", "3",
		"--interval", "5m", "--metrics-secure", "--warmup-cache=false", "--docker-webhook-secret", "s3cret")
	if err != nil {
		t.Fatalf("run with argocd-image-updater's flags: %v\n%s", err, out)
	}
	for _, want := range []string{
		`"level":"DEBUG","msg":"application observed"`, // --loglevel trace is debug, --logformat json
		`"msg":"argocd-image-updater flag has no effect in crowsnest","flag":"--docker-webhook-secret"`,
		`"msg":"argocd-image-updater flag has no effect in crowsnest","flag":"--metrics-secure"`,
		`"msg":"argocd-image-updater flag has no effect in crowsnest","flag":"--warmup-cache"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Errorf("a webhook secret given on the command line was printed:\n%s", out)
	}
	if n := strings.Count(out, `"flag":"--metrics-secure"`); n != 1 {
		t.Errorf("--metrics-secure reported %d times, want once", n)
	}

	out, err = run("--registries-conf-path", conf)
	if err == nil || !strings.Contains(out, "registries.confFile") {
		t.Errorf("a broken registries.conf given with --registries-conf-path: %v, want an error naming registries.confFile:\n%s", err, out)
	}

	out, err = run("--loglevel", "debug", "--log-level", "info")
	if err == nil || !strings.Contains(out, "--loglevel is argocd-image-updater's name for --log-level: give one of them") {
		t.Errorf("--loglevel with --log-level: %v, want refused:\n%s", err, out)
	}
	out, err = run("--webhook-port", "70000")
	if err == nil || !strings.Contains(out, "--webhook-port=70000: not a port") {
		t.Errorf("--webhook-port=70000: %v, want refused:\n%s", err, out)
	}
}
