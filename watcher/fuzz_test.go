package watcher

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzParseObjects feeds arbitrary files through everything the file source
// does with them: parse, trim, build the view, compare. None may panic.
func FuzzParseObjects(f *testing.F) {
	for _, p := range []string{"../examples/apps/guestbook.yaml", "../examples/apps/shop.yaml"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "---\n---\n", "{}", "[]", "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a}\nspec: {source: x}\n",
		"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, annotations: {a: 1}}\nstatus: {operationState: {syncResult: 5}}\n",
		"apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, labels: [x], annotations: {a: true, b: ~, c: {d: e}}}\n",
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: argoproj.io/v1alpha1, kind: Application, metadata: {name: a, namespace: 5}}\n",
		`{"apiVersion":"argoproj.io/v1alpha1","kind":"AppProject","metadata":{"name":"p"},"spec":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, _, err := parseObjects(data)
		if err != nil {
			return
		}
		for _, o := range objs {
			if o.GetName() == "" {
				t.Fatal("object without a name accepted")
			}
			for _, field := range []string{"labels", "annotations"} {
				if _, _, err := unstructured.NestedStringMap(o.Object, "metadata", field); err != nil {
					t.Fatalf("%s left unreadable: %v", field, err)
				}
			}
			orig := o.DeepCopy()
			if o.GetKind() == kindAppProject {
				_, _ = TrimProject(o)
				ProjectFromObject(o)
				continue
			}
			out, err := TrimApplication(o)
			if err != nil {
				t.Fatal(err)
			}
			trimmed := out.(*unstructured.Unstructured)
			_, _ = AppFromObject(trimmed)
			again, _ := TrimApplication(trimmed.DeepCopy())
			if Changed(trimmed, again.(*unstructured.Unstructured)) {
				t.Fatalf("trim is not idempotent for %v", orig.Object)
			}
		}
	})
}
