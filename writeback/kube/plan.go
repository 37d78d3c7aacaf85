package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// Patch is the write ApplyFrom would send to one Application.
type Patch struct {
	Namespace string
	Name      string
	// ResourceVersion is the version read, which the patch's first
	// operation pins: the apiserver refuses it once the Application
	// changed.
	ResourceVersion string
	// Type is the patch's content type: a JSON patch (RFC 6902).
	Type types.PatchType
	// Data is the patch; nil when the Application already carries every
	// value and nothing would be sent.
	Data []byte
}

// PlanFrom returns the patch ApplyFrom would send first, starting from
// cached as it does, and sends nothing.
func (w *Writer) PlanFrom(ctx context.Context, namespace, name string, cached *unstructured.Unstructured, overrides []Override) (Patch, error) {
	obj := cached
	if obj == nil || obj.GetResourceVersion() == "" {
		var err error
		obj, err = w.Client.Resource(watcher.ApplicationsResource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return Patch{}, fmt.Errorf("reading Application %s/%s: %w", namespace, name, err)
		}
	}
	data, err := buildPatch(obj, overrides)
	if err != nil {
		return Patch{}, fmt.Errorf("writing Application %s/%s: %w", namespace, name, err)
	}
	return Patch{Namespace: namespace, Name: name, ResourceVersion: obj.GetResourceVersion(), Type: types.JSONPatchType, Data: data}, nil
}
