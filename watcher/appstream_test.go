package watcher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	kjson "sigs.k8s.io/json"
)

// argoApp is an Application as Argo CD leaves it: managedFields, a
// last-applied copy, the resource tree, history and a sync result with
// its resources, none of which crowsnest keeps.
const argoApp = `{
  "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
  "metadata": {
    "name": "shop", "namespace": "argocd", "uid": "6c1f", "resourceVersion": "4711", "generation": 7,
    "creationTimestamp": "2026-11-20T10:00:00Z",
    "labels": {"team": "payments"},
    "annotations": {
      "argocd-image-updater.argoproj.io/image-list": "web=registry.example/shop",
      "kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"argoproj.io/v1alpha1\"}"
    },
    "finalizers": ["resources-finalizer.argocd.argoproj.io"],
    "managedFields": [{"manager": "argocd-server", "operation": "Update", "fieldsV1": {"f:spec": {"f:source": {}}}}]
  },
  "spec": {
    "project": "default", "revisionHistoryLimit": 3,
    "source": {"repoURL": "https://git.example/apps.git", "path": "shop", "targetRevision": "main",
      "helm": {"parameters": [{"name": "image.tag", "value": "1.0.0", "forceString": true}], "weight": 1.5}},
    "destination": {"server": "https://kubernetes.default.svc", "namespace": "shop"},
    "syncPolicy": {"automated": {"prune": true}, "retry": {"limit": 5, "backoff": {"factor": 2, "duration": "5s"}}},
    "ignoreDifferences": null
  },
  "operation": {"sync": {"revision": "abc"}, "initiatedBy": {"username": "admin"}},
  "status": {
    "sync": {"status": "Synced", "revision": "abc"},
    "health": {"status": "Healthy"},
    "summary": {"images": ["registry.example/shop:1.0.0"]},
    "conditions": [{"type": "SyncError", "message": "x"}],
    "sourceType": "Helm",
    "reconciledAt": "2026-11-22T10:00:00Z",
    "resources": [{"kind": "Deployment", "name": "web", "status": "Synced"}],
    "history": [{"id": 1, "revision": "abc"}],
    "operationState": {
      "phase": "Succeeded", "message": "done", "retryCount": 0, "startedAt": "2026-11-22T10:00:00Z",
      "operation": {"sync": {"revision": "abc"}},
      "syncResult": {"revision": "abc", "resources": [{"kind": "Deployment", "name": "web"}], "source": {"path": "shop"}}
    }
  }
}`

// trimReference is what client-go's dynamic informer and TrimApplication
// make of b.
func trimReference(b []byte) (map[string]any, error) {
	var m map[string]any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(b, &m); err != nil {
		return nil, err
	}
	out, _ := TrimApplication(&unstructured.Unstructured{Object: m})
	return out.(*unstructured.Unstructured).Object, nil
}

// trimStreamed is what appStream makes of b as a watch event's object.
func trimStreamed(b []byte) (map[string]any, error) {
	end, err := skipValue(b, 0)
	if err != nil {
		return nil, err
	}
	if skipSpace(b, end) != len(b) {
		return nil, syntaxErr(end, "data after the object")
	}
	obj, err := decodeEventObject(b[:end], watch.Modified, nil)
	if err != nil {
		return nil, err
	}
	return Unstored(obj).(*unstructured.Unstructured).Object, nil
}

// withoutNulls drops null values from maps: appStream reads a named field
// that is null as absent, where a map keeps the key.
func withoutNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			if e != nil {
				out[k] = withoutNulls(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i := range t {
			out[i] = withoutNulls(t[i])
		}
		return out
	}
	return v
}

func normalized(m map[string]any) any {
	out := withoutNulls(m).(map[string]any)
	if st, ok := out["status"].(map[string]any); ok && len(st) == 0 {
		delete(out, "status")
	}
	return out
}

func TestAppStreamDecodesWhatTrimKeeps(t *testing.T) {
	tests := []struct {
		name string
		doc  string
	}{
		{"argo cd application", argoApp},
		{"bookmark", `{"kind":"Application","apiVersion":"argoproj.io/v1alpha1","metadata":{"resourceVersion":"12","creationTimestamp":null,"annotations":{"k8s.io/initial-events-end":"true"}}}`},
		{"no status", `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"a"},"spec":{"source":{"repoURL":"r"}}}`},
		{"status of other fields only", `{"metadata":{"name":"a"},"status":{"resources":[],"reconciledAt":"x"}}`},
		{"operation state without sync result", `{"metadata":{"name":"a"},"status":{"operationState":{"phase":"Running"}}}`},
		{"sync result that is not an object", `{"metadata":{"name":"a"},"status":{"operationState":{"syncResult":5}}}`},
		{"operation state that is not an object", `{"metadata":{"name":"a"},"status":{"operationState":[1,2]}}`},
		{"numbers", `{"metadata":{"name":"a","generation":9007199254740993},"spec":{"i":1,"f":1.0,"e":1e3,"big":99999999999999999999,"neg":-0}}`},
		{"fields of other case are not ours", `{"Metadata":{"name":"x"},"metadata":{"Name":"y","name":"a"},"Spec":{},"status":{"Sync":{}}}`},
		{"annotations of other types", `{"metadata":{"name":"a","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"},"labels":null}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := trimReference([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			got, err := trimStreamed([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(normalized(want), normalized(got)); diff != "" {
				t.Errorf("streamed Application differs from the trimmed one (-want +got):\n%s", diff)
			}
		})
	}
	got, err := trimStreamed([]byte(argoApp))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: got}
	if len(u.GetManagedFields()) != 0 || u.GetAnnotations()[lastAppliedAnnotation] != "" {
		t.Errorf("managedFields or last-applied annotation kept: %v", u.Object["metadata"])
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(got, "status", "operationState", "syncResult", "resources"); found {
		t.Error("status.operationState.syncResult.resources kept")
	}
	if n, _, _ := unstructured.NestedInt64(got, "spec", "syncPolicy", "retry", "limit"); n != 5 {
		t.Errorf("spec.syncPolicy.retry.limit = %v, want int64 5", got["spec"])
	}
}

// A field of the wrong type is skipped, as TrimApplication skips it, and
// the rest of the Application is kept.
func TestAppStreamSkipsAFieldOfTheWrongType(t *testing.T) {
	got, err := trimStreamed([]byte(`{"metadata":{"name":"a","namespace":"n"},"spec":{"project":"p"},"status":"Failure"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"metadata": map[string]any{"name": "a", "namespace": "n"}, "spec": map[string]any{"project": "p"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestAppEventDecoder(t *testing.T) {
	app := `{"metadata":{"name":"a","resourceVersion":"5"}}`
	type event struct {
		Type watch.EventType
		Name string
		RV   string
	}
	tests := []struct {
		name    string
		stream  string
		want    []event
		wantErr error // after the events; io.EOF is the normal end
	}{
		{
			name:    "events in order",
			stream:  `{"type":"ADDED","object":` + app + "}\n" + `{"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"6"}}}` + "\n" + `{"type":"DELETED","object":` + app + "}\n",
			want:    []event{{watch.Added, "a", "5"}, {watch.Modified, "a", "6"}, {watch.Deleted, "a", "5"}},
			wantErr: io.EOF,
		},
		{
			name:    "object before its type, and keys nobody asked for",
			stream:  `{"object":` + app + `,"extra":{"x":[1]},"type":"MODIFIED"}`,
			want:    []event{{watch.Modified, "a", "5"}},
			wantErr: io.EOF,
		},
		{
			name:    "bookmark",
			stream:  `{"type":"BOOKMARK","object":{"kind":"Application","metadata":{"resourceVersion":"99","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
			want:    []event{{watch.Bookmark, "", "99"}},
			wantErr: io.EOF,
		},
		{name: "cut inside an event", stream: `{"type":"ADDED","object":{"metadata":{"na`, wantErr: io.ErrUnexpectedEOF},
		{name: "cut between keys", stream: `{"type":"ADDED",`, wantErr: io.ErrUnexpectedEOF},
		{name: "unknown type", stream: `{"type":"EXPLODED","object":` + app + "}", wantErr: errBadWatchEvent},
		{name: "no object", stream: `{"type":"ADDED"}`, wantErr: errBadWatchEvent},
		{name: "not an object", stream: `[{"type":"ADDED"}]`, wantErr: errBadWatchEvent},
		{name: "not JSON", stream: `{"type":"ADDED","object":{"metadata":x}}`, wantErr: errBadWatchEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newAppEventDecoder(io.NopCloser(strings.NewReader(tt.stream)))
			var got []event
			var err error
			for {
				var typ watch.EventType
				var obj any
				typ, obj, err = d.Decode()
				if err != nil {
					break
				}
				u := Unstored(obj).(*unstructured.Unstructured)
				got = append(got, event{typ, u.GetName(), u.GetResourceVersion()})
				// The reflector reads the end of a streaming list's initial
				// events from the stored object's metadata.
				if m, ok := obj.(metav1.Object); typ == watch.Bookmark && (!ok || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true") {
					t.Errorf("bookmark lost its %s annotation", metav1.InitialEventsAnnotationKey)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			// watch.StreamWatcher compares the stream's ends with ==.
			if errors.Is(tt.wantErr, io.EOF) || errors.Is(tt.wantErr, io.ErrUnexpectedEOF) {
				if err != tt.wantErr { //nolint:errorlint // as StreamWatcher compares
					t.Errorf("error = %v, want exactly %v", err, tt.wantErr)
				}
			} else if !errors.Is(err, tt.wantErr) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// An ERROR event becomes the apiserver's error, so that the reflector
// relists on "too old resource version".
func TestAppEventDecoderError(t *testing.T) {
	stream := `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}`
	d := newAppEventDecoder(io.NopCloser(strings.NewReader(stream)))
	typ, obj, err := d.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if typ != watch.Error {
		t.Fatalf("type = %s, want ERROR", typ)
	}
	if err := apierrors.FromObject(obj); !apierrors.IsResourceExpired(err) {
		t.Errorf("error from the event = %v, want resource expired", err)
	}
}

// FuzzAppStreamDecode checks appStream against client-go's decoding and
// TrimApplication on any JSON object: the same Application, nulls aside.
// Inputs are compared in the canonical form the apiserver writes (no
// duplicate keys); any input must decode without panicking.
func FuzzAppStreamDecode(f *testing.F) {
	f.Add([]byte(argoApp))
	f.Add([]byte(`{"metadata":{"name":"a"},"status":{"operationState":{"syncResult":{"resources":1,"revision":"r"}}}}`))
	f.Add([]byte(`{"metadata":"x","status":[]}`))
	f.Add([]byte(`{"type":"ADDED","object":{"metadata":{"name":"a"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = trimStreamed(b)
		d := newAppEventDecoder(io.NopCloser(bytes.NewReader(b)))
		for range 4 {
			if _, _, err := d.Decode(); err != nil {
				break
			}
		}

		var raw map[string]any
		if kjson.UnmarshalCaseSensitivePreserveInts(b, &raw) != nil {
			return
		}
		for _, k := range []string{"metadata", "status"} {
			if v, ok := raw[k]; ok && v != nil {
				if _, isMap := v.(map[string]any); !isMap {
					return // kept as is by TrimApplication, skipped here
				}
			}
		}
		canon, err := json.Marshal(raw)
		if err != nil {
			return
		}
		want, err := trimReference(canon)
		if err != nil {
			t.Fatalf("reference decode of canonical JSON: %v", err)
		}
		got, err := trimStreamed(canon)
		if err != nil {
			t.Fatalf("streamed decode of %s: %v", canon, err)
		}
		if diff := cmp.Diff(normalized(want), normalized(got)); diff != "" {
			t.Errorf("streamed Application differs from the trimmed one for %s (-want +got):\n%s", canon, diff)
		}
		wantView, wantErr := AppFromObject(&unstructured.Unstructured{Object: want})
		gotView, gotErr := viewStreamed(canon)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("view of %s: error %v, want %v", canon, gotErr, wantErr)
		}
		if wantErr != nil {
			return
		}
		wantView.Object = nil
		if diff := cmp.Diff(wantView, gotView, cmp.AllowUnexported(App{})); diff != "" {
			t.Errorf("view of the streamed Application differs from AppFromObject's for %s (-want +got):\n%s", canon, diff)
		}
	})
}

// viewStreamed is the view appStream stores for b, a watch event's
// object.
func viewStreamed(b []byte) (*App, error) {
	obj, err := decodeEventObject(b, watch.Modified, nil)
	if err != nil {
		return nil, err
	}
	s := obj.(*storedApp)
	return s.view, s.err
}

// The view stored with an Application is the one AppFromObject reads from
// the trimmed object, for the metadata's every type and the fields the
// view names.
func TestAppStreamViewIsAppFromObjects(t *testing.T) {
	tests := []struct{ name, doc string }{
		{"argo cd application", argoApp},
		{"labels and annotations with nulls", `{"metadata":{"name":"a","labels":{"x":null,"y":"1"},"annotations":{}}}`},
		{"labels of another type", `{"metadata":{"name":"a","labels":{"x":5},"annotations":"x"}}`},
		{"labels null", `{"metadata":{"name":"a","labels":null}}`},
		{"metadata of other types", `{"metadata":{"name":5,"namespace":["n"],"uid":{},"resourceVersion":7,"generation":"3"}}`},
		{"generation not an int64", `{"metadata":{"name":"a","generation":1.0,"resourceVersion":""}}`},
		{"generation zero", `{"metadata":{"name":"a","generation":-0}}`},
		{"deleting", `{"metadata":{"name":"a","deletionTimestamp":"2026-01-02T03:04:05Z"}}`},
		{"deletion timestamp zero or bad", `{"metadata":{"name":"a","deletionTimestamp":"0001-01-01T00:00:00Z"}}`},
		{"deletion timestamp not a time", `{"metadata":{"name":"a","deletionTimestamp":"yesterday"}}`},
		{"keys written with escapes", `{"met\u0061data":{"n\u0061me":"a","annotations":{"kubectl.kubernetes.io\/last-applied-configuration":"{}"}},"spec":{"project":"p"}}`},
		{"sources", `{"metadata":{"name":"a"},"spec":{"sources":[{"repoURL":"r","helm":{"parameters":[{"name":"x","value":"1","forceString":true}]}},{"repoURL":"s"}],"source":{"repoURL":"t"}}}`},
		{"operation pending", `{"metadata":{"name":"a"},"operation":{"sync":{}}}`},
		{"operation empty", `{"metadata":{"name":"a"},"operation":{}}`},
		{"status read", `{"metadata":{"name":"a"},"status":{"sync":{"status":"Synced","revision":"abc"},"health":{"status":"Healthy"},"operationState":{"phase":"Running","syncResult":{"resources":[1]}},"summary":{"images":["a:1"]},"sourceType":"Helm","sourceTypes":["Helm"]}}`},
		{"spec field of the wrong type", `{"metadata":{"name":"a","namespace":"n"},"spec":{"source":"x"}}`},
		{"operation of the wrong type", `{"metadata":{"name":"a"},"operation":[1]}`},
		{"status field of the wrong type", `{"metadata":{"name":"a"},"status":{"summary":{"images":[1]}}}`},
		{"source field of the wrong type", `{"metadata":{"name":"a"},"spec":{"sources":[{"repoURL":"r"},{"helm":{"parameters":[{"forceString":"yes"}]}}]}}`},
		{"spec of the wrong type", `{"metadata":{"name":"a"},"spec":[]}`},
		{"nulls", `{"metadata":{"name":"a"},"spec":{"source":null,"project":null},"operation":null,"status":{"sync":null,"operationState":{"phase":null}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trimmed, err := trimReference([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := AppFromObject(&unstructured.Unstructured{Object: trimmed})
			got, gotErr := viewStreamed([]byte(tt.doc))
			if wantErr != nil || gotErr != nil {
				if wantErr == nil || gotErr == nil || wantErr.Error() != gotErr.Error() {
					t.Fatalf("error %v, want %v", gotErr, wantErr)
				}
				return
			}
			want.Object = nil
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(App{})); diff != "" {
				t.Errorf("view (-AppFromObject +streamed):\n%s", diff)
			}
		})
	}
}

// A number no float64 holds fails the object wherever it is kept, as it
// fails client-go's decoding; where the trim drops it, it is never read.
func TestAppStreamFailsANumberOutOfRange(t *testing.T) {
	for _, doc := range []string{
		`{"metadata":{"name":"a"},"spec":{"x":1e400}}`,
		`{"metadata":{"name":"a"},"spec":{"x":[-2E+999]}}`,
		`{"metadata":{"name":"a","labels":{"x":"1e400"}},"spec":{"x":` + strings.Repeat("9", 400) + `}}`,
	} {
		if _, err := trimStreamed([]byte(doc)); !errors.Is(err, errBadWatchEvent) {
			t.Errorf("%s: error %v, want %v", doc, err, errBadWatchEvent)
		}
	}
	kept := `{"metadata":{"name":"a","managedFields":[{"x":1e400}],"labels":{"x":"1e400"}},"spec":{"x":1e300,"y":"1e400","z":` + strings.Repeat("9", 300) + `}}`
	if _, err := trimStreamed([]byte(kept)); err != nil {
		t.Errorf("%s: %v", kept, err)
	}
}

// A value no decoder can hold inside operationState fails the object, as
// it fails client-go's decoding, rather than leaving it cut short.
func TestAppStreamFailsAnObjectItCannotDecode(t *testing.T) {
	doc := []byte(`{"metadata":{"name":"a"},"spec":{"project":"p"},"status":{"operationState":{"retryCount":1e400}}}`)
	if _, err := trimReference(doc); err == nil {
		t.Fatal("client-go's decoding accepts 1e400; the test's premise is wrong")
	}
	if got, err := trimStreamed(doc); err == nil {
		t.Errorf("decoded %v, want an error", got)
	}
}

// countingLimiter is a client-side rate limiter that lets everything
// through and counts who asked.
type countingLimiter struct{ waits atomic.Int32 }

func (l *countingLimiter) TryAccept() bool { l.waits.Add(1); return true }
func (l *countingLimiter) Accept()         { l.waits.Add(1) }
func (l *countingLimiter) Stop()           {}
func (l *countingLimiter) QPS() float32    { return 1 }
func (l *countingLimiter) Wait(context.Context) error {
	l.waits.Add(1)
	return nil
}

// Lists take their turn at the rate limiter the patches share; watches,
// long-lived, do not, as client-go's own watches do not.
func TestAppStreamRateLimitsListsNotWatches(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			_, _ = io.WriteString(w, `{"type":"ADDED","object":{"metadata":{"name":"a","namespace":"n","resourceVersion":"2"}}}`)
			return
		}
		_, _ = io.WriteString(w, `{"kind":"ApplicationList","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a","namespace":"n"}}]}`)
	}))
	defer srv.Close()
	limiter := &countingLimiter{}
	clients, err := newAppClients(&rest.Config{Host: srv.URL, RateLimiter: limiter})
	if err != nil {
		t.Fatal(err)
	}
	lw := cache.ToListerWatcherWithContext(appListWatch(clients, "n", ""))
	l, err := lw.ListWithContext(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(Unstored(l).(*unstructured.UnstructuredList).Items); n != 1 {
		t.Errorf("%d Applications listed, want 1", n)
	}
	if got := limiter.waits.Load(); got != 1 {
		t.Errorf("a list asked the rate limiter %d times, want 1", got)
	}
	w, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	w.Stop()
	if ev.Type != watch.Added {
		t.Errorf("watch event %s %v, want ADDED", ev.Type, ev.Object)
	}
	if got := limiter.waits.Load(); got != 1 {
		t.Errorf("after a watch the rate limiter was asked %d times, want 1 (the list's)", got)
	}
}

// BenchmarkWatchEventDecode is the cost of one watch event of an Argo
// CD Application, from the wire to the stored object the informer keeps
// (its JSON and view): what every event costs crowsnest's informer.
func BenchmarkWatchEventDecode(b *testing.B) {
	var obj map[string]any
	if err := json.Unmarshal([]byte(argoApp), &obj); err != nil {
		b.Fatal(err)
	}
	ev, err := json.Marshal(map[string]any{"type": "MODIFIED", "object": obj})
	if err != nil {
		b.Fatal(err)
	}
	stream := bytes.Repeat(ev, b.N)
	d := newAppEventDecoder(io.NopCloser(bytes.NewReader(stream)))
	b.SetBytes(int64(len(ev)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, _, err := d.Decode(); err != nil {
			b.Fatal(err)
		}
	}
}
