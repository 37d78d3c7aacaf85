package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/watcher"
)

// RefreshAnnotation is Argo CD's annotation asking its application
// controller to compare an Application with Git now ("normal") or after
// dropping its manifest cache ("hard"); the controller removes it when
// done.
const RefreshAnnotation = "argocd.argoproj.io/refresh"

// Refresher asks Argo CD to refresh an Application crowsnest has just
// written a commit for, so the commit is deployed within seconds instead
// of at Argo CD's next poll of the repository (three minutes by default).
type Refresher struct {
	Client dynamic.Interface
	Mode   Mode
}

// Mode says how to ask Argo CD to refresh: config.Git.Refresh in force
// now, which a reload may change (the daemon's refreshMode).
type Mode interface {
	RefreshMode() string
}

// Refresh annotates the Application key (namespace/name). A mode of
// "none" does nothing.
func (r *Refresher) Refresh(ctx context.Context, key string) error {
	mode := r.Mode.RefreshMode()
	if mode == "" || mode == config.GitRefreshNone {
		return nil
	}
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		return fmt.Errorf("refresh %q: not a namespace/name key", key)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{RefreshAnnotation: mode}}})
	if err != nil {
		return err
	}
	if _, err := r.Client.Resource(watcher.ApplicationsResource).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "crowsnest"}); err != nil {
		return fmt.Errorf("asking Argo CD to refresh %s: %w", key, err)
	}
	return nil
}
