package kubecore

import (
	"context"
	"errors"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Scheme knows core/v1 and coordination/v1 and the meta types the
// apiserver answers with (Status, WatchEvent, the options): all that
// kubecore decodes, and no more.
var Scheme = runtime.NewScheme()

var (
	codecs         = serializer.NewCodecFactory(Scheme)
	parameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(corev1.AddToScheme(Scheme))
	utilruntime.Must(coordinationv1.AddToScheme(Scheme))
}

// GetReference returns a reference to object for an Event: object itself
// when it is an *corev1.ObjectReference, else its kind and apiVersion (set
// on unstructured objects, or known to Scheme) and its metadata.
func GetReference(object runtime.Object) (*corev1.ObjectReference, error) {
	if object == nil {
		return nil, errors.New("no object to reference")
	}
	if ref, ok := object.(*corev1.ObjectReference); ok {
		return ref, nil
	}
	gvk := object.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		gvks, _, err := Scheme.ObjectKinds(object)
		if err != nil {
			return nil, fmt.Errorf("referencing a %T: %w", object, err)
		}
		gvk = gvks[0]
	}
	m, err := meta.Accessor(object)
	if err != nil {
		return nil, fmt.Errorf("referencing a %T: %w", object, err)
	}
	return &corev1.ObjectReference{
		Kind:            gvk.Kind,
		APIVersion:      gvk.GroupVersion().String(),
		Name:            m.GetName(),
		Namespace:       m.GetNamespace(),
		UID:             m.GetUID(),
		ResourceVersion: m.GetResourceVersion(),
	}, nil
}

// ServerResourcesForGroupVersion returns the resources the apiserver
// serves in groupVersion ("v1" or "group/version"), as client-go's
// discovery client does: a NotFound error means it serves none.
func (c *Clientset) ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error) {
	path := "/apis/" + groupVersion
	if groupVersion == "v1" {
		path = "/api/v1"
	}
	list := &metav1.APIResourceList{}
	// The discovery client asks without a context too; the config's
	// timeout bounds the request.
	if err := c.core.Get().AbsPath(path).Do(context.Background()).Into(list); err != nil {
		return nil, err // callers test it with apierrors.IsNotFound, as the discovery client's
	}
	if list.GroupVersion == "" {
		list.GroupVersion = groupVersion
	}
	return list, nil
}
