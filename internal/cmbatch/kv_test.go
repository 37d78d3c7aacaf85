package cmbatch_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/internal/cmbatch"
)

// LoadAll reads every shard: shards never written are skipped, a key
// written into two shards (the shard count changed) keeps the later
// shard's value, and a shard that cannot be read fails the load with its
// name.
func TestKVLoadAll(t *testing.T) {
	c := wrappedClient(t, func(rt http.RoundTripper) http.RoundTripper { return rt })
	ns := env.CreateNamespace(t, "cmbatch")
	kv := &cmbatch.KV{Client: c, Namespace: ns, Prefix: "crowsnest-kv", Shards: 8}
	want := map[string]string{}
	for i := range 3 {
		app := fmt.Sprintf("team-%d/app", i)
		want[app] = fmt.Sprint("value-", i)
		if err := kv.Put(t.Context(), app, want[app]); err != nil {
			t.Fatal(err)
		}
	}
	// Three keys leave at least five of the eight shards unwritten.
	for shard, val := range map[int]string{0: "old", 7: "new"} {
		name := fmt.Sprintf("crowsnest-kv-%d", shard)
		cm, err := c.ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			cm, err = c.ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["moved_app"] = val
		if _, err := c.ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want["moved/app"] = "new"

	got, err := (&cmbatch.KV{Client: c, Namespace: ns, Prefix: "crowsnest-kv", Shards: 8}).LoadAll(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("loaded (-want +got):\n%s", diff)
	}

	refused := wrappedClient(t, func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/crowsnest-kv-5") {
				return &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{"Content-Type": {"text/plain"}},
					Body: io.NopCloser(strings.NewReader("forbidden")), Request: r}, nil
			}
			return rt.RoundTrip(r)
		})
	})
	_, err = (&cmbatch.KV{Client: refused, Namespace: ns, Prefix: "crowsnest-kv", Shards: 8}).LoadAll(t.Context())
	if err == nil || !strings.Contains(err.Error(), "ConfigMap "+ns+"/crowsnest-kv-5") {
		t.Errorf("LoadAll with shard 5 refused: error %v, want one naming ConfigMap %s/crowsnest-kv-5", err, ns)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
