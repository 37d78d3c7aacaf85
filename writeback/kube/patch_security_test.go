package kube

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Values with JSON and JSON-pointer metacharacters, newlines and 1 KB of
// text stay values: the patch has exactly the pin and one op per list, at
// fixed paths, and each value decodes back unchanged.
func TestHostileValuesStayValuesInThePatch(t *testing.T) {
	hostile := []string{`nginx:zz"},{"op":"remove","path":"/spec"}`, "nginx:9.9.9\n- op: remove", "nginx:~1/../0", "nginx:" + strings.Repeat("z", 1024)}
	for _, v := range hostile {
		app := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "web", "resourceVersion": "7"},
			"spec":     map[string]any{"source": map[string]any{"repoURL": "https://git.example.com/x.git", "helm": map[string]any{}}},
		}}
		patch, err := buildPatch(app, []Override{{
			SourceIndex:     -1,
			KustomizeImages: []KustomizeImage{{Name: "nginx", Entry: v}},
			HelmParameters:  []watcher.HelmParameter{{Name: "image.tag/" + v, Value: v, ForceString: true}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		var ops []struct {
			Op, Path string
			Value    json.RawMessage
		}
		if err := json.Unmarshal(patch, &ops); err != nil {
			t.Fatalf("%q: the patch is not JSON: %v", v, err)
		}
		var paths []string
		for _, o := range ops {
			paths = append(paths, o.Op+" "+o.Path)
		}
		want := []string{"replace /metadata/resourceVersion", "add /spec/source/kustomize", "add /spec/source/helm/parameters"}
		if diff := cmp.Diff(want, paths); diff != "" {
			t.Fatalf("%q: ops (-want +got):\n%s", v, diff)
		}
		var kustomize struct{ Images []string }
		var params []watcher.HelmParameter
		if json.Unmarshal(ops[1].Value, &kustomize) != nil || json.Unmarshal(ops[2].Value, &params) != nil {
			t.Fatalf("%q: values do not decode: %s", v, patch)
		}
		if diff := cmp.Diff([]string{v}, kustomize.Images); diff != "" {
			t.Errorf("kustomize images (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]watcher.HelmParameter{{Name: "image.tag/" + v, Value: v, ForceString: true}}, params); diff != "" {
			t.Errorf("helm parameters (-want +got):\n%s", diff)
		}
	}
}
