package controller_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/registry"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

const (
	describedRevision = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"
	describedSource   = "https://github.com/team/app"
)

// capturingWriter is a Git writer that keeps the changes it is handed
// and answers that every value was already as asked.
type capturingWriter struct {
	mu      sync.Mutex
	changes []gitwb.Change
}

func (w *capturingWriter) Apply(_ context.Context, changes []gitwb.Change) ([]gitwb.Result, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changes = append(w.changes, changes...)
	out := make([]gitwb.Result, 0, len(changes))
	for i := range changes {
		out = append(out, gitwb.Result{RepoURL: gitwb.RepoID(changes[i].RepoURL), Branch: changes[i].Branch, Keys: []string{changes[i].Key}, NoOp: true})
	}
	return out, nil
}

// images are the images of the changes written, as the test compares them.
func (w *capturingWriter) images() []gitwb.Image {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []gitwb.Image
	for i := range w.changes {
		out = append(out, w.changes[i].Images...)
	}
	return out
}

// describedRegistry is appRegistry whose 1.1.0 states its source in its
// config labels, as docker/metadata-action writes them.
func describedRegistry(t *testing.T) (*testreg.OCI, string) {
	t.Helper()
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	reg.Push(t, "team/app:1.0.0", testreg.Image(t, t0, "linux/amd64"))
	reg.Push(t, "team/app:1.1.0", testreg.Labeled(t, testreg.Image(t, t0.Add(time.Hour), "linux/amd64"),
		map[string]string{"org.opencontainers.image.revision": describedRevision, "org.opencontainers.image.source": describedSource}))
	return reg, reg.Host() + "/team/app"
}

// A pull-request write-back's images carry the new image's source
// revision and repository, looked up with the client that selected it
// when selection read no metadata (one HEAD, one manifest, one config),
// and taken from selection when it did (no request more than a push
// makes). A push carries none and asks the registry nothing it did not
// before; a failed lookup leaves them empty and the write goes on.
func TestPullRequestImagesCarryTheirSource(t *testing.T) {
	reg, image := describedRegistry(t)
	prMode := func(doc string) string {
		return strings.Replace(doc, "  annotations:\n", "  annotations:\n    crowsnest.dev/pull-request: \"true\"\n", 1)
	}
	newestBuild := func(doc string) string {
		doc = strings.Replace(doc, "image-list: "+image+":^1", "image-list: app="+image, 1)
		return strings.Replace(doc, "  annotations:\n", "  annotations:\n    argocd-image-updater.argoproj.io/app.update-strategy: newest-build\n", 1)
	}
	described := gitwb.Image{Revision: describedRevision, Source: describedSource}
	tests := []struct {
		name  string
		doc   func(doc string) string
		fault func(w http.ResponseWriter, r *http.Request) bool
		want  gitwb.Image // Revision and Source
		// HEADs, manifest and blob GETs the reconcile made.
		requests []int
	}{
		{name: "push", doc: func(doc string) string { return doc }, requests: []int{0, 0, 0}},
		{name: "pull request: looked up", doc: prMode, want: described, requests: []int{1, 1, 1}},
		{name: "push reading metadata", doc: newestBuild, requests: []int{2, 2, 2}},
		{name: "pull request: from selection", doc: func(doc string) string { return prMode(newestBuild(doc)) }, want: described, requests: []int{2, 2, 2}},
		{name: "pull request: lookup fails", doc: prMode, requests: []int{1, 0, 0},
			fault: func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method != http.MethodHead {
					return false
				}
				w.WriteHeader(http.StatusNotFound)
				return true
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg.Reset()
			reg.SetFault(tt.fault)
			t.Cleanup(func() { reg.SetFault(nil) })
			got := writtenImage(t, tt.doc(gitAppDoc("web", "{ns}", image, "https://git.example/apps.git", "web", "main")), image,
				&controller.ImageReconciler{Registry: &registry.Client{Hosts: sameHosts{RateLimit: -1}}})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("revision and source (-want +got):\n%s", diff)
			}
			counts := []int{reg.Count("head", ""), reg.Count("manifest", ""), reg.Count("blob", "")}
			if diff := cmp.Diff(tt.requests, counts); diff != "" {
				t.Errorf("HEADs, manifest and blob GETs (-want +got):\n%s", diff)
			}
		})
	}
}

// The lookup asks with the credentials that selected the image (its pull
// secret's client), never the shared client's: here the shared one is
// anonymous and the registry refuses it.
func TestPullRequestImageSourceWithThePullSecretsClient(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBasic, Username: "team", Password: "team-secret"})
	src, _ := describedRegistry(t)
	for _, tag := range []string{"1.0.0", "1.1.0"} {
		img, err := remote.Image(src.Ref(t, "team/app:"+tag), remote.WithContext(t.Context()))
		if err != nil {
			t.Fatal(err)
		}
		reg.Push(t, "team/app:"+tag, img)
	}
	image := reg.Host() + "/team/app"
	doc := strings.Replace(gitAppDoc("web", "{ns}", image, "https://git.example/apps.git", "web", "main"), "  annotations:\n",
		"  annotations:\n    crowsnest.dev/pull-request: \"true\"\n    argocd-image-updater.argoproj.io/pull-secret: pullsecret:{ns}/regcred\n", 1)
	team := &registry.Client{Hosts: sameHosts{RateLimit: -1}, Auth: basicAuth{user: "team", password: "team-secret"}}
	got := writtenImage(t, doc, image, &controller.ImageReconciler{Registry: &registry.Client{Hosts: sameHosts{RateLimit: -1}},
		Registries: pullSecretClient{secret: "regcred", client: team}})
	if diff := cmp.Diff(gitwb.Image{Revision: describedRevision, Source: describedSource}, got); diff != "" {
		t.Errorf("revision and source (-want +got):\n%s", diff)
	}
	for _, r := range reg.Requests() {
		if r.Status == http.StatusUnauthorized && r.Kind != "ping" { // a ping learns how to authenticate
			t.Errorf("%s %s was refused: asked without the pull secret's credentials", r.Method, r.Path)
		}
	}
}

// writtenImage reconciles the Application doc describes, in a namespace
// of its own that replaces "{ns}" in doc, with images, whose writer
// captures the change, and returns the Revision and Source of the one
// image written (at 1.1.0).
func writtenImage(t *testing.T, doc, image string, images *controller.ImageReconciler) gitwb.Image {
	t.Helper()
	ns := env.CreateNamespace(t, "describe")
	doc = strings.ReplaceAll(doc, "{ns}", ns)
	req := gitRequest(t, ns, doc, image)
	w := &capturingWriter{}
	images.Events, images.Queue, images.Log = &appEvents{}, appLookup(req), slog.New(slog.DiscardHandler)
	images.Metrics = controller.NewImageMetrics(prometheus.NewRegistry())
	images.Git = &collect.Batcher{Writer: w}
	runBatch(t, images, req)
	got := w.images()
	if len(got) != 1 || got[0].NewTag != "1.1.0" {
		t.Fatalf("images written = %+v, want one at 1.1.0", got)
	}
	return gitwb.Image{Revision: got[0].Revision, Source: got[0].Source}
}

// pullSecretClient is controller.Registries whose images with the pull
// secret of that name (in any namespace) read with client.
type pullSecretClient struct {
	secret string
	client *registry.Client
}

func (p pullSecretClient) ForPullSecret(ref string) *registry.Client {
	if strings.HasPrefix(ref, "pullsecret:") && strings.HasSuffix(ref, "/"+p.secret) {
		return p.client
	}
	return nil
}

func (pullSecretClient) Qualify(image string) string { return image }

// basicAuth is a registry.Authorizer with one user name and password.
type basicAuth struct{ user, password string }

func (a basicAuth) Authenticator(context.Context, string) (authn.Authenticator, error) {
	return &authn.Basic{Username: a.user, Password: a.password}, nil
}

func (basicAuth) Invalidate(string) {}
