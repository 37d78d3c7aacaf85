package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// localApp is an Application file for local mode.
func localApp(name, image, annotations, source string) string {
	return fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %[1]s
  namespace: ci
  annotations:
    argocd-image-updater.argoproj.io/image-list: %[1]s=%[2]s:^1
%[3]s
spec:
  project: default
  source: %[4]s
  destination: {server: https://kubernetes.default.svc, namespace: %[1]s}
status:
  summary: {images: ["%[2]s:1.0.0"]}
`, name, image, annotations, source)
}

// runOnce runs `crowsnest run --apps-dir dir --once` and returns its
// stderr and exit error.
func runOnce(t *testing.T, dir string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), binary, "run", "--apps-dir", dir, "--once",
		"--git-cache-dir", filepath.Join(t.TempDir(), "git"), "--log-format", "json",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", "0")
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	return stderr.String(), err
}

// Local mode for CI pipelines: Applications from files, a real registry and
// a real Git server (authenticated with the environment's credentials).
// One pass commits the Git-mode update, patches the Kubernetes-mode one in
// memory (files untouched), and exits 0; a pass with a failure exits 1.
func TestE2ELocalModeOnce(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushTags(t, reg, "team/web", "1.0.0", "1.3.0")
	api := pushTags(t, reg, "team/api", "1.0.0", "1.2.0")

	gitSrv := testgit.Start(t, testgit.Options{Username: "ci", Password: "ci-t0ken"})
	gitSrv.CreateRepo(t, "deploy")
	kustomization := fmt.Sprintf("images:\n- name: %s\n  newTag: 1.0.0\n", web)
	before := gitSrv.Seed(t, "deploy", "main", map[string]string{"apps/web/kustomization.yaml": kustomization}, "initial")

	dir := t.TempDir()
	apps := localApp("web", web,
		"    argocd-image-updater.argoproj.io/write-back-method: git\n    argocd-image-updater.argoproj.io/write-back-target: kustomization",
		fmt.Sprintf("{repoURL: %s, path: apps/web, targetRevision: main}", gitSrv.RepoURL("deploy"))) +
		"---\n" + localApp("api", api, "", "{repoURL: https://git.example.invalid/api.git, path: deploy}")
	writeFile(t, filepath.Join(dir, "apps.yaml"), apps)
	creds := []string{"CROWSNEST_GIT_USERNAME=ci", "CROWSNEST_GIT_PASSWORD=ci-t0ken"}

	log, err := runOnce(t, dir, creds...)
	if err != nil {
		t.Fatalf("run --once: %v\n%s", err, log)
	}
	if gitSrv.Head(t, "deploy", "main") == before {
		t.Fatalf("no commit on main\n%s", log)
	}
	got, _ := gitSrv.ReadFile(t, "deploy", "main", "apps/web/kustomization.yaml")
	if want := strings.Replace(kustomization, "1.0.0", "1.3.0", 1); got != want {
		t.Errorf("kustomization.yaml:\n%s\nwant:\n%s", got, want)
	}
	for _, want := range []string{
		`"reason":"ImagesUpdated","message":"` + api + `: 1.0.0 -> 1.2.0 (patched the Application)"`,
		`"msg":"one pass finished"`,
		"crowsnest: one pass: 2 applications, 2 managed: 2 updated, 0 up to date, 0 held, 0 failed\n",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "apps.yaml")); string(b) != apps {
		t.Error("local mode changed the Application file")
	}

	// A failure anywhere (here: Git credentials refused) fails the pass.
	gitSrv.Seed(t, "deploy", "main", map[string]string{"apps/web/kustomization.yaml": kustomization}, "back to 1.0.0")
	log, err = runOnce(t, dir, "CROWSNEST_GIT_USERNAME=ci", "CROWSNEST_GIT_PASSWORD=wrong")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("run --once with a failing write-back: %v, want exit code 1\n%s", err, log)
	}
	if !strings.Contains(log, "one pass finished with 1 failure(s)") {
		t.Errorf("the failure is not reported:\n%s", log)
	}
	// The failed write is not retried within the pass, and the summary
	// counts it failed.
	if n := strings.Count(log, `"msg":"git write-back failed; will retry"`); n != 1 {
		t.Errorf("%d failed Git writes logged, want 1 (a single pass does not retry):\n%s", n, log)
	}
	if want := "crowsnest: one pass: 2 applications, 2 managed: 1 updated, 0 up to date, 0 held, 1 failed\n"; !strings.Contains(log, want) {
		t.Errorf("log lacks %q:\n%s", want, log)
	}

	// --once is local mode's.
	if log, err := runOnceWithout(t); err == nil || !strings.Contains(log, "--once needs --apps-dir") {
		t.Errorf("--once without --apps-dir: %v\n%s", err, log)
	}
}

func runOnceWithout(t *testing.T) (string, error) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), binary, "run", "--once").CombinedOutput()
	return string(out), err
}

// The config's git section shapes the commits: author, message template
// and an OpenPGP signature that verifies with the public key.
func TestE2EGitCommitSettings(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushTags(t, reg, "team/web", "1.0.0", "1.3.0")
	gitSrv := testgit.Start(t, testgit.Options{})
	gitSrv.CreateRepo(t, "deploy")
	gitSrv.Seed(t, "deploy", "main", map[string]string{"apps/web/kustomization.yaml": fmt.Sprintf("images:\n- name: %s\n  newTag: 1.0.0\n", web)}, "initial")

	entity, err := openpgp.NewEntity("Crow Bot", "", "bot@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	var priv, pub bytes.Buffer
	for _, k := range []struct {
		buf       *bytes.Buffer
		typ       string
		serialize func(io.Writer) error
	}{
		{&priv, openpgp.PrivateKeyType, func(w io.Writer) error { return entity.SerializePrivate(w, nil) }},
		{&pub, openpgp.PublicKeyType, entity.Serialize},
	} {
		aw, err := armor.Encode(k.buf, k.typ, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := k.serialize(aw); err != nil {
			t.Fatal(err)
		}
		if err := aw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key.asc")
	writeFile(t, keyFile, priv.String())
	cfg := filepath.Join(dir, "crowsnest.yaml")
	writeFile(t, cfg, fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
git:
  author: {name: Release Bot, email: release-bot@example.com}
  commitMessage: "deploy({{range .Apps}}{{.}}{{end}}): {{range .Updates}}{{.From}} -> {{.To}}{{end}}"
  signingKey: file:%s
`, keyFile))
	apps := filepath.Join(dir, "apps")
	if err := os.Mkdir(apps, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(apps, "web.yaml"), localApp("web", web,
		"    argocd-image-updater.argoproj.io/write-back-method: git\n    argocd-image-updater.argoproj.io/write-back-target: kustomization",
		fmt.Sprintf("{repoURL: %s, path: apps/web, targetRevision: main}", gitSrv.RepoURL("deploy"))))

	cmd := exec.CommandContext(t.Context(), binary, "run", "--apps-dir", apps, "--once", "--config", cfg,
		"--git-cache-dir", filepath.Join(dir, "git"), "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", "0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run --once: %v\n%s", err, out)
	}
	repo, err := gogit.PlainOpen(filepath.Join(gitSrv.Root, "deploy.git"))
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		t.Fatal(err)
	}
	if c.Author.Name != "Release Bot" || c.Author.Email != "release-bot@example.com" {
		t.Errorf("author %s <%s>", c.Author.Name, c.Author.Email)
	}
	if want := "deploy(web): 1.0.0 -> 1.3.0\n"; c.Message != want {
		t.Errorf("message %q, want %q", c.Message, want)
	}
	if _, err := c.Verify(pub.String()); err != nil {
		t.Errorf("signature does not verify: %v (signature %q)", err, c.PGPSignature)
	}
}
