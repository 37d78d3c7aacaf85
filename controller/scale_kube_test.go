package controller_test

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/watcher"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// Sizes and client limits of the Kubernetes-mode scale test. The limits
// are low enough that the pass is paced by the client's limiter, not by
// the apiserver (which serves this test's 16 workers at about 260/s under
// -race on two cores): 2,000 requests at 100/s after a burst of 200 take
// at least 18s.
const (
	kubeScaleApps    = 1000
	kubeScaleRepos   = 20
	kubeScaleQPS     = 100
	kubeScaleBurst   = 200
	kubeScaleWorkers = 16
	// pacingSlack is how many requests beyond the token bucket's bound a
	// window may show: timestamps are taken after the limiter lets a
	// request go, and a busy machine can delay one goroutine's timestamp
	// past a later one's. Half a second's worth is far below what an
	// unlimited client shows here (over 600 requests beyond the bound).
	pacingSlack = kubeScaleQPS / 2
)

// 1000 Applications in Kubernetes mode, each running an old tag, are all
// patched to the newest allowed tag in one pass: one GET and one PATCH per
// Application (no conflicts, no retries), one tag list per image
// repository, and every request paced by the client's QPS and burst.
func TestScaleKubeModeThousandApps(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 1000 Applications; skipped with -short")
	}
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	newTags := pushScaleTags(t, reg, kubeScaleRepos)
	image := func(i int) string { return reg.Host() + "/" + scaleRepo(i%kubeScaleRepos) }
	name := func(i int) string { return fmt.Sprintf("app-%04d", i) }

	ns := env.CreateNamespace(t, "scale-kube")
	setup := setupApps(t, ns)
	createAppsRunning(t, setup, kubeScaleApps, func(i int) string {
		return fmt.Sprintf(`
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: %[1]s
  namespace: %[2]s
  annotations:
    argocd-image-updater.argoproj.io/image-list: %[3]s:^1
spec:
  project: default
  destination: {server: https://kubernetes.default.svc, namespace: %[1]s}
  source:
    repoURL: https://git.example.com/apps.git
    path: apps/%[1]s
    targetRevision: main
    kustomize: {namePrefix: prod-}
`, name(i), ns, image(i))
	}, func(i int) string { return image(i) + ":1.0.0" })

	// crowsnest's client, as `crowsnest run --kube-api-qps 100
	// --kube-api-burst 200` builds it, with every request recorded.
	requests := &requestLog{}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = kubeScaleQPS, kubeScaleBurst
	cfg.WrapTransport = requests.wrap
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	events := &eventLog{}
	metrics := prometheus.NewRegistry()
	engine := &controller.Engine{Workers: kubeScaleWorkers, Metrics: controller.NewMetrics(metrics), Log: discardLog()}
	engine.Sources = []controller.Source{&watcher.KubeSource{Client: dyn, Namespaces: []string{ns}, Log: discardLog()}}
	engine.Reconciler = &controller.ImageReconciler{
		Registry: &registry.Client{Log: discardLog()},
		Writer:   &kube.Writer{Client: dyn, Log: discardLog()},
		Queue:    noFirstPass{engine},
		Events:   events,
		Metrics:  controller.NewImageMetrics(metrics),
		Log:      discardLog(),
	}
	start := time.Now()
	stop := runEngine(t, engine)
	// The Event follows a successful patch.
	waitScale(t, "every Application to be patched", func() bool { return events.count(controller.EventImagesUpdated) >= kubeScaleApps },
		func() string {
			return fmt.Sprintf("%d ImagesUpdated Events, %d patches sent, warnings %q",
				events.count(controller.EventImagesUpdated), requests.count("patch"), events.warnings())
		})
	pass := time.Since(start)
	// Stopping waits for in-flight reconciles: the counts below are final.
	// After its patch each Application is reconciled once more (its spec
	// changed) and found up to date, which writes nothing.
	stop()

	list, err := setup.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != kubeScaleApps {
		t.Fatalf("%d Applications, want %d", len(list.Items), kubeScaleApps)
	}
	for i := range list.Items {
		u := &list.Items[i]
		var idx int
		if _, err := fmt.Sscanf(u.GetName(), "app-%04d", &idx); err != nil {
			t.Fatalf("unexpected Application %s", u.GetName())
		}
		got, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "source", "kustomize", "images")
		if want := []string{image(idx) + ":" + newTags[idx%kubeScaleRepos]}; !slices.Equal(got, want) {
			t.Errorf("%s: kustomize images %v, want %v", u.GetName(), got, want)
		}
		if prefix, _, _ := unstructured.NestedString(u.Object, "spec", "source", "kustomize", "namePrefix"); prefix != "prod-" {
			t.Errorf("%s: namePrefix %q, want prod- (a field crowsnest does not own was lost)", u.GetName(), prefix)
		}
		key := ns + "/" + u.GetName()
		if diff := cmp.Diff([]string{controller.EventImagesUpdated}, events.reasons(key)); diff != "" {
			t.Errorf("Events of %s (-want +got):\n%s", key, diff)
		}
	}
	if w := events.warnings(); len(w) > 0 {
		t.Errorf("%d Warning Events, want none: %q", len(w), w)
	}
	// Besides one write per Application (pinned to the informer's copy, so
	// nothing is read: nobody else writes here), only the informer's list
	// and watch (or a streaming watch alone) went out.
	got := requests.counts()
	if got["get"] != 0 || got["patch"] != kubeScaleApps {
		t.Errorf("requests by kind %v, want no get and one patch per Application (%d)", got, kubeScaleApps)
	}
	for kind := range got {
		if !slices.Contains([]string{"get", "patch", "list", "watch"}, kind) {
			t.Errorf("unexpected %d %s requests", got[kind], kind)
		}
	}
	if got := counter(t, metrics, "crowsnest_image_updates_total", map[string]string{"method": "argocd", "result": "success"}); got != kubeScaleApps {
		t.Errorf("crowsnest_image_updates_total{method=argocd,result=success} = %v, want %d", got, kubeScaleApps)
	}
	for i := range kubeScaleRepos {
		if n := reg.Count("list", "/v2/"+scaleRepo(i)+"/tags/list"); n != 1 {
			t.Errorf("%s: %d tag lists, want 1 for the whole pass", scaleRepo(i), n)
		}
	}

	// The limiter's bound: in any window, no more than burst + qps*window
	// requests went out; the whole pass took at least (n-burst)/qps.
	times := requests.times()
	n := len(times)
	span := times[n-1].Sub(times[0])
	minSpan := time.Duration(float64(n-kubeScaleBurst-pacingSlack) / kubeScaleQPS * float64(time.Second))
	t.Logf("%d Applications patched in %s; %d requests over %s (%.0f/s; the limiter allows %d/s after a burst of %d)",
		kubeScaleApps, pass.Round(time.Millisecond), n, span.Round(time.Millisecond), float64(n)/span.Seconds(), kubeScaleQPS, kubeScaleBurst)
	if span < minSpan {
		t.Errorf("%d requests in %s, want at least %s at %d/s after a burst of %d", n, span, minSpan, kubeScaleQPS, kubeScaleBurst)
	}
	if i, j, excess := worstWindow(times, kubeScaleQPS, kubeScaleBurst); excess > pacingSlack {
		t.Errorf("requests %d..%d (%d within %s) exceed the limiter's bound by %.0f", i, j, j-i+1, times[j].Sub(times[i]), excess)
	}
}

// worstWindow finds the window of requests that most exceeds the token
// bucket's bound count <= burst + qps*duration.
func worstWindow(times []time.Time, qps float64, burst int) (int, int, float64) {
	wi, wj, worst := 0, 0, -float64(burst)
	for i := range times {
		for j := i; j < len(times); j++ {
			excess := float64(j-i+1) - float64(burst) - qps*times[j].Sub(times[i]).Seconds()
			if excess > worst {
				wi, wj, worst = i, j, excess
			}
		}
	}
	return wi, wj, worst
}

// requestLog records the time and kind of every request a client sends
// (after its rate limiter lets it go).
type requestLog struct {
	mu    sync.Mutex
	at    []time.Time
	kinds map[string]int
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		l.record(requestKind(r))
		return rt.RoundTrip(r)
	})
}

func (l *requestLog) record(kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kinds == nil {
		l.kinds = map[string]int{}
	}
	l.at = append(l.at, time.Now())
	l.kinds[kind]++
}

func (l *requestLog) count(kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.kinds[kind]
}

func (l *requestLog) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.kinds)
}

func (l *requestLog) times() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.at)
}

// requestKind tells one Application's reads and writes apart from the
// informer's list and watch of the collection.
func requestKind(r *http.Request) string {
	collection := strings.HasSuffix(r.URL.Path, "/applications")
	switch {
	case r.Method == http.MethodGet && r.URL.Query().Get("watch") == "true":
		return "watch"
	case r.Method == http.MethodGet && collection:
		return "list"
	case r.Method == http.MethodGet:
		return "get"
	case r.Method == http.MethodPatch:
		return "patch"
	default:
		return strings.ToLower(r.Method)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
