package localkube

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// memApps holds local mode's in-memory Applications behind the part of a
// dynamic client that kube.Writer and Apps use: Get, Create, and JSON
// or merge Patch, with the apiserver's resourceVersion precondition. The
// rest answers an error. (client-go's fake dynamic client would do, but it
// links client-go/testing, managed fields and the OpenAPI models into the
// daemon: megabytes of binary, resident at run time.)
type memApps struct {
	mu   sync.Mutex
	objs map[string]*unstructured.Unstructured // by namespace/name
	rv   int
}

var _ dynamic.Interface = (*memApps)(nil)

func newMemApps() *memApps { return &memApps{objs: map[string]*unstructured.Unstructured{}} }

func (m *memApps) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return memResource{apps: m, gvr: gvr}
}

type memResource struct {
	apps      *memApps
	gvr       schema.GroupVersionResource
	namespace string
}

func (r memResource) Namespace(namespace string) dynamic.ResourceInterface {
	r.namespace = namespace
	return r
}

func (r memResource) check(name string, subresources []string) error {
	if r.gvr != watcher.ApplicationsResource || len(subresources) > 0 {
		return apierrors.NewNotFound(r.gvr.GroupResource(), name)
	}
	return nil
}

func (r memResource) Get(_ context.Context, name string, _ metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error) {
	if err := r.check(name, subresources); err != nil {
		return nil, err
	}
	r.apps.mu.Lock()
	defer r.apps.mu.Unlock()
	obj, ok := r.apps.objs[r.namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(r.gvr.GroupResource(), name)
	}
	return obj.DeepCopy(), nil
}

func (r memResource) Create(_ context.Context, obj *unstructured.Unstructured, _ metav1.CreateOptions, subresources ...string) (*unstructured.Unstructured, error) {
	if err := r.check(obj.GetName(), subresources); err != nil {
		return nil, err
	}
	r.apps.mu.Lock()
	defer r.apps.mu.Unlock()
	key := r.namespace + "/" + obj.GetName()
	if _, ok := r.apps.objs[key]; ok {
		return nil, apierrors.NewAlreadyExists(r.gvr.GroupResource(), obj.GetName())
	}
	stored := obj.DeepCopy()
	stored.SetNamespace(r.namespace)
	r.apps.store(key, stored)
	return stored.DeepCopy(), nil
}

func (r memResource) Patch(_ context.Context, name string, pt types.PatchType, data []byte, _ metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error) {
	if err := r.check(name, subresources); err != nil {
		return nil, err
	}
	r.apps.mu.Lock()
	defer r.apps.mu.Unlock()
	key := r.namespace + "/" + name
	obj, ok := r.apps.objs[key]
	if !ok {
		return nil, apierrors.NewNotFound(r.gvr.GroupResource(), name)
	}
	doc, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("patching Application %s: %w", key, err)
	}
	switch pt {
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(data); err == nil {
			doc, err = p.Apply(doc)
		}
	case types.MergePatchType:
		doc, err = jsonpatch.MergePatch(doc, data)
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patch type %s is not supported in local mode", pt))
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patching Application %s: %v", key, err))
	}
	patched := &unstructured.Unstructured{}
	if err := patched.UnmarshalJSON(doc); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patching Application %s: %v", key, err))
	}
	// As the apiserver: a resourceVersion the patch sets is a precondition.
	if rv := patched.GetResourceVersion(); rv != "" && rv != obj.GetResourceVersion() {
		return nil, apierrors.NewConflict(r.gvr.GroupResource(), name, fmt.Errorf("resourceVersion %s is not the current %s", rv, obj.GetResourceVersion()))
	}
	r.apps.store(key, patched)
	return patched.DeepCopy(), nil
}

// store keeps obj under key with a new resourceVersion; the caller holds mu.
func (m *memApps) store(key string, obj *unstructured.Unstructured) {
	m.rv++
	obj.SetResourceVersion(strconv.Itoa(m.rv))
	m.objs[key] = obj
}

func (r memResource) unsupported(op string) error {
	return fmt.Errorf("%s of %s is not supported in local mode", op, r.gvr.Resource)
}

func (r memResource) Update(context.Context, *unstructured.Unstructured, metav1.UpdateOptions, ...string) (*unstructured.Unstructured, error) {
	return nil, r.unsupported("update")
}

func (r memResource) UpdateStatus(context.Context, *unstructured.Unstructured, metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	return nil, r.unsupported("update")
}

func (r memResource) Delete(context.Context, string, metav1.DeleteOptions, ...string) error {
	return r.unsupported("delete")
}

func (r memResource) DeleteCollection(context.Context, metav1.DeleteOptions, metav1.ListOptions) error {
	return r.unsupported("delete")
}

func (r memResource) List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return nil, r.unsupported("list")
}

func (r memResource) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, r.unsupported("watch")
}

func (r memResource) Apply(context.Context, string, *unstructured.Unstructured, metav1.ApplyOptions, ...string) (*unstructured.Unstructured, error) {
	return nil, r.unsupported("apply")
}

func (r memResource) ApplyStatus(context.Context, string, *unstructured.Unstructured, metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	return nil, r.unsupported("apply")
}
