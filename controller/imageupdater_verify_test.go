package controller_test

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/crowsnest-dev/crowsnest/config/imageupdater"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdaters"
	"github.com/crowsnest-dev/crowsnest/internal/kubecore"
	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testsign"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/creds"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

// An ImageUpdater's imagesVerification on the real apiserver, its key
// read from a Secret of its namespace: at spec level the newest tag (1.2.0,
// unsigned) is skipped and the signed 1.1.0 written; an image that turns
// it off gets 1.2.0; an image whose cosignKey names a Secret that does not
// exist is not updated, and the field is named.
func TestImageUpdaterVerification(t *testing.T) {
	reg, image := appRegistry(t)
	reg.Push(t, "team/app:1.2.0", testreg.Image(t, time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC), "linux/amd64"))
	d, err := remote.Head(reg.Ref(t, "team/app:1.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	signer := testsign.NewSigner(t, testsign.ECDSA)
	signer.SignAndAttach(t, reg, "team/app", d.Digest.String(), testsign.TagSchema)

	ns := env.CreateNamespace(t, "iuverify")
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cosign"},
		Data: map[string][]byte{"cosign.pub": []byte(signer.PublicPEM)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u, err := imageupdater.Parse(fmt.Appendf(nil, `
apiVersion: argocd-image-updater.argoproj.io/v1alpha1
kind: ImageUpdater
metadata: {name: shop, namespace: %[2]s, generation: 1}
spec:
  imagesVerification: {cosignKey: {secretName: cosign, key: cosign.pub}}
  writeBackConfig: {method: argocd}
  applicationRefs:
  - namePattern: signed
    images: [{alias: app, imageName: "%[1]s:1.x"}]
  - namePattern: open
    images: [{alias: app, imageName: "%[1]s:1.x", imagesVerification: {enabled: false}}]
  - namePattern: lost
    images: [{alias: app, imageName: "%[1]s:1.x", imagesVerification: {cosignKey: {secretName: gone, key: cosign.pub}}}]
`, image, ns))
	if err != nil {
		t.Fatal(err)
	}
	core, err := kubecore.NewForConfig(env.Config) // the daemon's Secrets client
	if err != nil {
		t.Fatal(err)
	}
	set := &imageupdaters.Set{Secrets: creds.KubeSecrets{Client: core}, Log: slog.New(slog.DiscardHandler)}
	set.Apply(u, nil)
	if p := set.Problems(ns + "/shop"); len(p) > 0 {
		t.Fatalf("problems compiling: %v", p)
	}
	events := &reasonMessages{}
	images := &controller.ImageReconciler{
		Events:        events,
		Registry:      &registry.Client{},
		Writer:        &kube.Writer{Client: dynClient(t)},
		ImageUpdaters: set,
		Log:           slog.New(slog.DiscardHandler),
	}
	for _, name := range []string{"signed", "open", "lost"} {
		createApp(t, ns, name)
		setStatus(t, ns, name, map[string]any{"summary": map[string]any{"images": []any{image + ":1.0.0"}}})
		if _, err := images.Reconcile(t.Context(), requestOf(t, ns, name)); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string][]string{
		"signed": {image + ":1.1.0"}, // 1.2.0 is not signed
		"open":   {image + ":1.2.0"}, // verification off for this image
		"lost":   nil,                // the key cannot be read: not updated
	} {
		if got := kustomizeImages(t, ns, name); !slices.Equal(got, want) {
			t.Errorf("%s carries %v, want %v", name, got, want)
		}
	}
	field := "ImageUpdater " + ns + "/shop spec.applicationRefs[2].images[0].imagesVerification.cosignKey.secretName: "
	if !slices.ContainsFunc(events.all(), func(e string) bool { return strings.Contains(e, field) && strings.Contains(e, "not updated") }) {
		t.Errorf("no Event names %q; Events: %q", field, events.all())
	}
	var warned []string
	for _, e := range events.all() {
		if strings.HasPrefix(e, controller.EventSignatureNotVerified+": ") {
			warned = append(warned, e)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], image+":1.2.0") {
		t.Errorf("SignatureNotVerified Events = %q, want one, for signed's %s:1.2.0", warned, image)
	}
}
