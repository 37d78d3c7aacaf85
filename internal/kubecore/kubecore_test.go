package kubecore_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore/kubecoretest"
)

// The resources round-trip through the apiserver with the local scheme,
// and a write over a stale resourceVersion is a Conflict.
func TestConfigMapsRoundTrip(t *testing.T) {
	c := kubecoretest.New(t, env.Config)
	ns := env.CreateNamespace(t, "kubecore")
	cms := c.ConfigMaps(ns)
	created, err := cms.Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "state", Labels: map[string]string{"app": "crowsnest"}},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := created.DeepCopy()
	created.Data["k"] = "v2"
	if _, err := cms.Update(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale.Data["k"] = "v3"
	if _, err := cms.Update(t.Context(), stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update over a stale resourceVersion: %v, want a Conflict", err)
	}
	if _, err := cms.Patch(t.Context(), "state", types.MergePatchType, []byte(`{"data":{"p":"1"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := cms.List(t.Context(), metav1.ListOptions{LabelSelector: "app=crowsnest"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("listed %d ConfigMaps, want 1", len(list.Items))
	}
	if diff := cmp.Diff(map[string]string{"k": "v2", "p": "1"}, list.Items[0].Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	if err := cms.Delete(t.Context(), "state", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(t.Context(), "state", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
}

// The groups share one rate limiter when the config has none, as
// client-go's clientset's do; a config that sets QPS without a burst is
// refused.
func TestNewForConfigRateLimits(t *testing.T) {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 5, 0
	if _, err := kubecore.NewForConfig(cfg); err == nil {
		t.Error("NewForConfig accepted QPS without a burst")
	}
	cfg.Burst = 10
	if _, err := kubecore.NewForConfig(cfg); err != nil {
		t.Error(err)
	}
}

// Discovery answers as client-go's discovery client does.
func TestServerResourcesForGroupVersion(t *testing.T) {
	c := kubecoretest.New(t, env.Config)
	disc := discovery.NewDiscoveryClientForConfigOrDie(env.Config)
	tests := []struct {
		groupVersion string
		want         string // a resource the list must hold
		wantNotFound bool
	}{
		{groupVersion: "v1", want: "configmaps"},
		{groupVersion: "coordination.k8s.io/v1", want: "leases"},
		{groupVersion: "nothing.example.com/v1", wantNotFound: true},
	}
	for _, tt := range tests {
		t.Run(tt.groupVersion, func(t *testing.T) {
			list, err := c.ServerResourcesForGroupVersion(tt.groupVersion)
			if tt.wantNotFound {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("err = %v, want NotFound", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for i := range list.APIResources {
				names = append(names, list.APIResources[i].Name)
			}
			if !cmp.Equal(list.GroupVersion, tt.groupVersion) || !contains(names, tt.want) {
				t.Errorf("got %s %v, want %s with %s", list.GroupVersion, names, tt.groupVersion, tt.want)
			}
			want, err := disc.ServerResourcesForGroupVersion(tt.groupVersion)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, list, cmpopts.IgnoreFields(metav1.APIResourceList{}, "TypeMeta")); diff != "" {
				t.Errorf("kubecore and client-go's discovery differ (-client-go +kubecore):\n%s", diff)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestGetReference(t *testing.T) {
	app := &unstructured.Unstructured{}
	app.SetAPIVersion("argoproj.io/v1alpha1")
	app.SetKind("Application")
	app.SetNamespace("argocd")
	app.SetName("web")
	app.SetUID("u1")
	app.SetResourceVersion("7")
	ref := &corev1.ObjectReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: "argocd", Name: "web"}
	tests := []struct {
		name    string
		object  runtime.Object
		want    *corev1.ObjectReference
		wantErr bool
	}{
		{name: "a reference is itself", object: ref, want: ref},
		{name: "unstructured with its kind", object: app, want: &corev1.ObjectReference{
			APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Namespace: "argocd", Name: "web", UID: "u1", ResourceVersion: "7",
		}},
		{name: "built-in kind from the scheme", object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}},
			want: &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm"}},
		{name: "unstructured without a kind", object: &unstructured.Unstructured{Object: map[string]any{}}, wantErr: true},
		{name: "nothing", object: nil, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kubecore.GetReference(tt.object)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reference (-want +got):\n%s", diff)
			}
		})
	}
}
