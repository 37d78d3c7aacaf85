package kube

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Override is what to set in one source of an Application.
type Override struct {
	// SourceIndex is the index in spec.sources, or -1 for spec.source.
	SourceIndex int
	// KustomizeImages are kustomize images entries, each replacing the
	// entry for the same image name or added at the end.
	KustomizeImages []KustomizeImage
	// HelmParameters replace parameters of the same name or are added.
	HelmParameters []watcher.HelmParameter
}

// KustomizeImage is one spec.source.kustomize.images entry.
type KustomizeImage struct {
	// Name is the image name the entry is for ("nginx", "base/nginx").
	Name string
	// Entry is the whole entry ("nginx:1.2.0", "base/nginx=nginx:1.2.0").
	Entry string
}

// op is one RFC 6902 operation.
type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// buildPatch returns the JSON patch that applies overrides to obj, or nil
// when obj already carries them. The first op pins the resourceVersion
// read, so the apiserver refuses the patch with a conflict when anyone
// wrote in between.
func buildPatch(app *unstructured.Unstructured, overrides []Override) ([]byte, error) {
	var ops []op
	for _, o := range overrides {
		obj := app
		base := "/spec/source"
		path := []string{"spec", "source"}
		if o.SourceIndex >= 0 {
			sources, _, _ := unstructured.NestedSlice(obj.Object, "spec", "sources")
			if o.SourceIndex >= len(sources) {
				return nil, fmt.Errorf("spec.sources[%d] does not exist (the Application has %d sources)", o.SourceIndex, len(sources))
			}
			base = fmt.Sprintf("/spec/sources/%d", o.SourceIndex)
			src, ok := sources[o.SourceIndex].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("spec.sources[%d] is not an object", o.SourceIndex)
			}
			obj = &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"source": src}}}
		} else if _, found, _ := unstructured.NestedMap(obj.Object, path...); !found {
			return nil, fmt.Errorf("the Application has no spec.source")
		}
		srcOps, err := sourceOps(obj, base, o)
		if err != nil {
			return nil, err
		}
		ops = append(ops, srcOps...)
	}
	if len(ops) == 0 {
		return nil, nil
	}
	pin := op{Op: "replace", Path: "/metadata/resourceVersion", Value: app.GetResourceVersion()}
	return json.Marshal(append([]op{pin}, ops...))
}

// sourceOps computes the ops for one source at base (JSON pointer), whose
// content is obj's spec.source.
func sourceOps(obj *unstructured.Unstructured, base string, o Override) ([]op, error) {
	var ops []op
	if len(o.KustomizeImages) > 0 {
		cur, _, err := unstructured.NestedStringSlice(obj.Object, "spec", "source", "kustomize", "images")
		if err != nil {
			return nil, fmt.Errorf("%s/kustomize/images: %w", base, err)
		}
		next := mergeKustomizeImages(cur, o.KustomizeImages)
		if !slices.Equal(cur, next) {
			ops = append(ops, setOp(obj, base, "kustomize", "images", next))
		}
	}
	if len(o.HelmParameters) > 0 {
		raw, _, err := unstructured.NestedSlice(obj.Object, "spec", "source", "helm", "parameters")
		if err != nil {
			return nil, fmt.Errorf("%s/helm/parameters: %w", base, err)
		}
		next, changed := mergeHelmParameters(raw, o.HelmParameters)
		if changed {
			ops = append(ops, setOp(obj, base, "helm", "parameters", next))
		}
	}
	return ops, nil
}

// setOp sets base/section/field to value, creating the section when the
// source has none. Replacing the one list keeps every other field.
func setOp(obj *unstructured.Unstructured, base, section, field string, value any) op {
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "source", section); !found {
		return op{Op: "add", Path: base + "/" + section, Value: map[string]any{field: value}}
	}
	return op{Op: "add", Path: base + "/" + section + "/" + field, Value: value} // add replaces an existing member
}

// mergeKustomizeImages replaces the entries for the same image names and
// appends the rest, keeping everyone else's entries and their order.
func mergeKustomizeImages(cur []string, want []KustomizeImage) []string {
	next := append([]string(nil), cur...)
	for _, w := range want {
		i := indexKustomize(next, w.Name)
		if i < 0 {
			next = append(next, w.Entry)
			continue
		}
		next[i] = w.Entry
	}
	return next
}

// indexKustomize finds the entry for image name: "name=...", or an entry
// whose own image (before the tag or digest) is name.
func indexKustomize(entries []string, name string) int {
	for i, e := range entries {
		if n, _, ok := strings.Cut(e, "="); ok {
			if n == name {
				return i
			}
			continue
		}
		if imageName(e) == name {
			return i
		}
	}
	return -1
}

// imageName strips the tag and digest from "repo[:tag][@digest]".
func imageName(ref string) string {
	if at := strings.IndexByte(ref, '@'); at >= 0 {
		ref = ref[:at]
	}
	slash := strings.LastIndexByte(ref, '/')
	if c := strings.IndexByte(ref[slash+1:], ':'); c >= 0 {
		return ref[:slash+1+c]
	}
	return ref
}

// mergeHelmParameters sets parameters by name, keeping the rest as they
// are (including fields crowsnest does not know).
func mergeHelmParameters(cur []any, want []watcher.HelmParameter) ([]any, bool) {
	next := append([]any(nil), cur...)
	changed := false
	for _, w := range want {
		found := false
		for i, p := range next {
			m, ok := p.(map[string]any)
			if !ok || m["name"] != w.Name {
				continue
			}
			found = true
			if m["value"] != w.Value || (w.ForceString && m["forceString"] != true) {
				cp := maps.Clone(m)
				cp["value"] = w.Value
				if w.ForceString {
					cp["forceString"] = true
				}
				next[i] = cp
				changed = true
			}
			break
		}
		if !found {
			p := map[string]any{"name": w.Name, "value": w.Value}
			if w.ForceString {
				p["forceString"] = true
			}
			next = append(next, p)
			changed = true
		}
	}
	return next, changed
}
