package collect_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crowsnest-dev/crowsnest/internal/testgit"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
	"github.com/crowsnest-dev/crowsnest/writeback/git/collect"
)

// pushGate stands between the writer and a Git server and gives git
// every push whatever the client does: it reads the whole push, calls
// onPush (the test's SIGTERM), then hands the push to the server on a
// context of its own, so it lands even when the client gives up, and
// answers the client or, with drop, resets its connection. landed is
// closed once the server has answered the push.
type pushGate struct {
	proxy  *httputil.ReverseProxy
	client *http.Client
	target *url.URL
	onPush func()
	drop   bool
	landed chan struct{}
}

func startPushGate(t *testing.T, server string, onPush func(), drop bool) (string, *pushGate) {
	t.Helper()
	target, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	g := &pushGate{proxy: httputil.NewSingleHostReverseProxy(target), client: &http.Client{Transport: tr},
		target: target, onPush: onPush, drop: drop, landed: make(chan struct{})}
	g.proxy.Transport = tr
	front := httptest.NewServer(g)
	t.Cleanup(func() {
		front.Close()
		tr.CloseIdleConnections()
	})
	return front.URL, g
}

func (g *pushGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
		g.proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	g.onPush()
	fwd, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, g.target.String()+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fwd.Header = r.Header.Clone()
	resp, err := g.client.Do(fwd)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	close(g.landed)
	if err != nil || g.drop {
		if conn, _, herr := w.(http.Hijacker).Hijack(); herr == nil {
			_ = conn.Close()
		}
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// A shutdown (SIGTERM) that begins while a batch's push is under way: the
// server takes the push whatever the client does, so the outcome is the
// write made in that commit (which the image reconciler announces), not a
// failure to retry, whether the push's answer arrives within the writer's
// grace or is lost and the remote is asked.
func TestGitBatchShutdownDuringAPushThatLands(t *testing.T) {
	for _, lost := range []bool{false, true} {
		t.Run(map[bool]string{false: "answer arrives", true: "answer lost"}[lost], func(t *testing.T) {
			srv := testgit.Start(t, testgit.Options{})
			srv.CreateRepo(t, "apps")
			const image = "registry.example/team/web"
			srv.Seed(t, "apps", "main", map[string]string{"web/kustomization.yaml": kustomizationOf(image, "1.0.0")}, "seed")
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			front, gate := startPushGate(t, srv.URL, cancel, lost)
			const key = "shop/web"

			b := &collect.Batcher{Writer: testGitWriter(t)}
			b.Add(key, gitwb.Change{App: "web", RepoURL: front + "/apps.git", Branch: "main", Path: "web",
				Target: gitwb.Target{Kind: gitwb.TargetKustomization}, Images: []gitwb.Image{{Name: image, NewTag: "1.1.0"}}})
			r := &runner{}
			r.run(ctx, b)

			select {
			case <-gate.landed:
			case <-time.After(waitTimeout):
				t.Fatal("the server never answered the push")
			}
			head := srv.Head(t, "apps", "main")
			if got, _ := srv.ReadFile(t, "apps", "main", "web/kustomization.yaml"); got != kustomizationOf(image, "1.1.0") {
				t.Fatalf("the push did not land:\n%s", got)
			}
			o := outcomeOf(t, r.list(), key)
			if o.Failed() || !o.Written() || len(o.Results) != 1 || o.Results[0].Commit != head {
				t.Fatalf("outcome %+v; want written in commit %s, not failed", o, head)
			}
			want := []gitwb.Update{{App: "web", Key: key, Image: image, From: "1.0.0", To: "1.1.0"}}
			if diff := cmp.Diff(want, o.Results[0].Updates, cmpopts.IgnoreFields(gitwb.Update{}, "File")); diff != "" {
				t.Errorf("updates (-want +got):\n%s", diff)
			}
		})
	}
}
