package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// redactApp is annotatedApp with the given image-list and source
// repository, written back to Git when gitMode.
func redactApp(name, imageList, repoURL string, gitMode bool) string {
	ann := fmt.Sprintf("    argocd-image-updater.argoproj.io/image-list: %q", imageList)
	if gitMode {
		ann += "\n    argocd-image-updater.argoproj.io/write-back-method: git"
	}
	return strings.Replace(annotatedApp(name, ann), "https://git.example.com/web.git", repoURL, 1)
}

// One rule for secrets at every exit, through the real daemon at debug
// level: a Git repository URL with a token in it is never logged with the
// token (and the write-back through it works); image references written
// with user:password@ in an annotation give an InvalidAnnotation Event
// without the password; and a Git URL pointing at a server that answers
// 403 or 500 with a body gives an ImageUpdateFailed Event that says the
// status and never the body.
func TestE2ERedactionAtEveryExit(t *testing.T) {
	const (
		gitToken     = "git-t0ken-S3CR3T-a41c"
		imagePass    = "img-pa55-S3CR3T-9d2e"
		remoteMarker = "INTERNAL-ANSWER-MARKER-62bf"
	)
	kubeconfig, ns, dir := e2eCluster(t, "e2e-redact")
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushTags(t, reg, "team/web", "1.0.0", "1.5.0")

	gitSrv := testgit.Start(t, testgit.Options{Username: "bot", Password: gitToken})
	gitSrv.CreateRepo(t, "deploy")
	before := gitSrv.Seed(t, "deploy", "main", map[string]string{"deploy/kustomization.yaml": "images:\n- name: " + web + "\n  newTag: 1.0.0\n"}, "initial")
	withToken := strings.Replace(gitSrv.RepoURL("deploy"), "http://", "http://bot:"+gitToken+"@", 1)

	hostile := func(status int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(status)
			_, _ = fmt.Fprintf(w, "<html>internal service: %s</html>", remoteMarker)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/deploy.git"
	}

	cfgPath := filepath.Join(dir, "crowsnest.yaml")
	writeFile(t, cfgPath, fmt.Sprintf("apiVersion: crowsnest.dev/v1alpha1\nkind: Config\nlog: {level: debug}\nleaderElection: {leaseNamespace: %s}\n", ns))
	d := startDaemon(t, "--kubeconfig", kubeconfig, "--config", cfgPath, "--namespace", ns, "--log-format", "json",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", "0",
		"--git-cache-dir", filepath.Join(dir, "git"))
	d.waitLog(t, `"msg":"engine caches synced"`)

	running := web + ":1.0.0"
	createApp(t, ns, redactApp("git-token", "app="+web, withToken, true), running)
	createApp(t, ns, redactApp("image-userinfo", "a=user:"+imagePass+"@"+web+", b=https://user:"+imagePass+"@"+web, "https://git.example.com/r.git", false), running)
	createApp(t, ns, redactApp("git-403", "app="+web, hostile(http.StatusForbidden), true), running)
	createApp(t, ns, redactApp("git-500", "app="+web, hostile(http.StatusInternalServerError), true), running)

	waitFor(t, "the push through the URL's token", func() bool { return gitSrv.Head(t, "deploy", "main") != before })
	d.waitLog(t, `"level":"DEBUG"`, `"msg":"git write-back queued"`, `"repo":"http://***@127.0.0.1:`)
	want := map[string][]string{
		"git-token":      {"ImagesUpdated", "-> 1.5.0 (commit"},
		"image-userinfo": {"InvalidAnnotation", `"***@` + web},
		"git-403":        {"ImageUpdateFailed", "authorization failed (HTTP 403)"},
		"git-500":        {"ImageUpdateFailed", "status code: 500"},
	}
	for app, w := range want {
		waitFor(t, fmt.Sprintf("a %s Event on %s naming %q", w[0], app, w[1]), func() bool {
			return hasAppEvent(t, ns, app, w[0], w[1])
		})
	}

	events, err := kubernetes.NewForConfigOrDie(env.Config).CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var evText []string
	for _, e := range events.Items {
		evText = append(evText, e.InvolvedObject.Name+" "+e.Reason+": "+e.Message)
	}
	outputs := map[string]string{"daemon log": strings.Join(d.lines(), "\n"), "Events": strings.Join(evText, "\n")}
	for where, text := range outputs {
		for _, secret := range []string{gitToken, imagePass, remoteMarker} {
			if i := strings.Index(text, secret); i >= 0 {
				t.Errorf("%q shows in the %s: ...%s...", secret, where, text[max(0, i-200):min(len(text), i+len(secret)+100)])
			}
		}
	}
}

// The CLI's own output: `config validate` quoting config values and any
// command's error (main prints it) show no credentials.
func TestCLIOutputRedacted(t *testing.T) {
	const secret = "cli-S3CR3T-77b1"
	dir := t.TempDir()
	path := filepath.Join(dir, "crowsnest.yaml")
	writeFile(t, path, fmt.Sprintf(`apiVersion: crowsnest.dev/v1alpha1
kind: Config
leaderElection: {leaseDuration: "https://u:%[1]s@h.example.com"}
watch: {namespaces: ["https://u:%[1]s@x"]}
notifications:
  services:
    hook: {webhook: {url: "ftp://hooks.example.com/x?token=%[1]s"}}
    mail: {email: {host: "u:%[1]s@smtp.example.com", from: a@example.com}}
`, secret))
	for name, args := range map[string][]string{
		"config validate": {"config", "validate", path},
		"test":            {"test", "user:" + secret + "@registry.example.com/app:1.0"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := exec.CommandContext(t.Context(), binary, args...).CombinedOutput()
			if err == nil {
				t.Fatalf("crowsnest %s succeeded:\n%s", name, out)
			}
			if strings.Contains(string(out), secret) || !strings.Contains(string(out), "***") {
				t.Errorf("crowsnest %s shows the secret or masks nothing:\n%s", name, out)
			}
		})
	}
}
