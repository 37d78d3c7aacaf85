package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// syncUser is the username Argo CD shows for syncs crowsnest requests.
const syncUser = "crowsnest"

// ErrOperationRunning says an Application already has a sync requested or
// running, so crowsnest leaves it alone.
var ErrOperationRunning = errors.New("an operation is already requested or running")

// RequestSync asks Argo CD to sync the Application as an automated sync by
// crowsnest: it sets the operation field, pinned to the version just read,
// unless an operation is requested or running; a sync someone else starts
// in between is never overwritten (the patch then conflicts).
func RequestSync(ctx context.Context, client dynamic.Interface, namespace, name, reason string) error {
	apps := client.Resource(watcher.ApplicationsResource).Namespace(namespace)
	obj, err := apps.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading Application %s/%s: %w", namespace, name, err)
	}
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "operationState", "phase")
	if _, requested := obj.Object["operation"]; requested || phase == "Running" {
		return ErrOperationRunning
	}
	operation := map[string]any{
		"initiatedBy": map[string]any{"username": syncUser, "automated": true},
		"sync":        map[string]any{},
		"info":        []any{map[string]any{"name": "Reason", "value": reason}},
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "replace", "path": "/metadata/resourceVersion", "value": obj.GetResourceVersion()},
		{"op": "add", "path": "/operation", "value": operation},
	})
	if err != nil {
		return err
	}
	_, err = apps.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: "crowsnest"})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("the Application %s/%s changed while requesting a sync; not retried: %w", namespace, name, err)
	}
	if err != nil {
		return fmt.Errorf("requesting a sync of %s/%s: %w", namespace, name, err)
	}
	return nil
}
