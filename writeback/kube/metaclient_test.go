package kube

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// patchAnswers keeps the content types and bodies of the answers to
// PATCH requests.
type patchAnswers struct {
	next   http.RoundTripper
	mu     sync.Mutex
	types  []string
	bodies []string
}

func (p *patchAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(r)
	if err != nil || r.Method != http.MethodPatch {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	p.mu.Lock()
	p.types = append(p.types, resp.Header.Get("Content-Type"))
	p.bodies = append(p.bodies, string(b))
	p.mu.Unlock()
	return resp, nil
}

// With a MetaClient, the apiserver answers a patch with the Application's
// metadata only, in protobuf (an Application as a whole has no protobuf
// form); a refusal is a Status; the write lands, the result's resourceVersion is the
// Application's, and a stale copy still costs one conflict and one read.
func TestMetaClientPatchesAndReadsMetadataOnly(t *testing.T) {
	dyn := dynamic.NewForConfigOrDie(env.Config)
	answers := &patchAnswers{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { answers.next = rt; return answers })
	meta, err := MetadataOnlyClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.CreateNamespace(t, "wbmeta")
	createNginxApp(t, dyn, ns, "web")
	apps := dyn.Resource(watcher.ApplicationsResource).Namespace(ns)
	read := func() *unstructured.Unstructured {
		u, err := apps.Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	w := &Writer{Client: dyn, MetaClient: meta}
	stale := read()
	for i, tag := range []string{"1.1.0", "1.2.0"} {
		cached := read()
		if i == 1 {
			cached = stale // another write happened since: a conflict, then a read
		}
		res, err := w.ApplyFrom(t.Context(), ns, "web", cached, []Override{{SourceIndex: -1, KustomizeImages: []KustomizeImage{{Name: "nginx", Entry: "nginx:" + tag}}}})
		if err != nil {
			t.Fatal(err)
		}
		got := read()
		images, _, _ := unstructured.NestedStringSlice(got.Object, "spec", "source", "kustomize", "images")
		if !res.Patched || !slices.Equal(images, []string{"nginx:" + tag}) {
			t.Errorf("write %d: patched=%v, images %q; want nginx:%s", i, res.Patched, images, tag)
		}
		if res.ResourceVersion == "" || res.ResourceVersion != got.GetResourceVersion() {
			t.Errorf("write %d: result resourceVersion %q, the Application's is %q", i, res.ResourceVersion, got.GetResourceVersion())
		}
		if want := i + 1; res.Attempts != want {
			t.Errorf("write %d: %d attempts, want %d", i, res.Attempts, want)
		}
	}
	answers.mu.Lock()
	defer answers.mu.Unlock()
	if len(answers.bodies) != 3 { // 1.1.0; 1.2.0's conflict and its retry
		t.Fatalf("%d patch answers, want 3", len(answers.bodies))
	}
	for i, b := range answers.bodies {
		metadata := answers.types[i] == "application/vnd.kubernetes.protobuf" && strings.Contains(b, "PartialObjectMetadata")
		status := strings.Contains(b, `"kind":"Status"`) && !strings.Contains(b, `"spec"`)
		if metadata == status {
			t.Errorf("patch answer %d is neither the metadata in protobuf nor a Status: %s, %q", i, answers.types[i], b)
		}
	}
}

// The apiserver's refusals come back as its errors, with its reason and
// message, not as an "unknown" server error.
func TestMetaPatcherReturnsTheAPIServersError(t *testing.T) {
	meta, err := MetadataOnlyClient(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.CreateNamespace(t, "wbmetaerr")
	_, err = meta.Patch(t.Context(), ns, "missing", []byte(`[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`))
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `"missing" not found`) {
		t.Errorf("patching a missing Application: %v, want the apiserver's not found", err)
	}
}
