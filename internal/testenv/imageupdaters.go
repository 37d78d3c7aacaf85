package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
)

// ImageUpdatersGVR is argocd-image-updater 1.x's ImageUpdater resource.
var ImageUpdatersGVR = schema.GroupVersionResource{Group: "argocd-image-updater.argoproj.io", Version: "v1alpha1", Resource: "imageupdaters"}

// ImageUpdaterCRDName is the name of ImageUpdatersGVR's CRD.
const ImageUpdaterCRDName = "imageupdaters.argocd-image-updater.argoproj.io"

// imageUpdaterCRDFile is argocd-image-updater v1.3.0's own CRD (copied
// unchanged from its repository), from the module root.
const imageUpdaterCRDFile = "cmd/crowsnest/testdata/aiu/imageupdaters-crd.yaml"

// InstallImageUpdaterCRD creates argocd-image-updater's ImageUpdater CRD
// (already there is fine) and waits until the apiserver serves it. The
// caller decides whether it stays: the control plane is shared.
func (e *Env) InstallImageUpdaterCRD(ctx context.Context) error {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return errors.New("finding the module root")
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", imageUpdaterCRDFile))
	if err != nil {
		return err
	}
	// The file is the release's install manifest: the CRD follows a
	// leading comment document.
	_, doc, _ := strings.Cut(string(data), "---\n")
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		return fmt.Errorf("reading %s: %w", imageUpdaterCRDFile, err)
	}
	dyn, err := dynamic.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD %s: %w", ImageUpdaterCRDName, err)
	}
	disc, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	// Served once it lists, and discovery (which crowsnest asks) names it.
	for {
		_, err := dyn.Resource(ImageUpdatersGVR).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			_, err = disc.Discovery().ServerResourcesForGroupVersion(ImageUpdatersGVR.GroupVersion().String())
		}
		if err == nil {
			return nil
		}
		if backoff.Sleep(ctx, 50*time.Millisecond) != nil {
			return fmt.Errorf("waiting for %s to be served: %w (last error: %w)", ImageUpdatersGVR.Resource, ctx.Err(), err)
		}
	}
}
