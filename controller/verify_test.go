package controller_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/controller"
	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/internal/testsign"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/writeback/kube"
)

type fixedPolicies struct{ p *imageupdate.Policies }

func (f fixedPolicies) Policies() *imageupdate.Policies { return f.p }

// An image policy with a cosign key, on the real apiserver: the newest tag
// is not signed, so the signed one before it is kept, and one Warning
// Event names the skipped tag and why (not again while it stays so); once
// the newest is signed, with the same key, it is written, pinned to the
// digest that was verified.
func TestSignedTagsOnly(t *testing.T) {
	reg, image := appRegistry(t)
	signer := testsign.NewSigner(t, testsign.ECDSA)
	digestOf := func(tag string) string {
		t.Helper()
		d, err := remote.Head(reg.Ref(t, "team/app:"+tag))
		if err != nil {
			t.Fatal(err)
		}
		return d.Digest.String()
	}
	signer.SignAndAttach(t, reg, "team/app", digestOf("1.0.0"), testsign.TagSchema)

	ns := env.CreateNamespace(t, "verify")
	ps, err := imageupdate.CompilePolicies([]config.ImagePolicy{{Name: "signed", Match: config.PolicyMatch{Projects: []string{"*"}},
		Images: []config.PolicyImage{{Image: image, Constraint: "^1",
			Verify: &config.PolicyVerify{Cosign: &config.PolicyCosign{PublicKeys: []string{signer.PublicPEM}}}}},
		WriteBack: config.PolicyWriteBack{Method: "argocd", PinDigest: true}}})
	if err != nil {
		t.Fatal(err)
	}
	events := &reasonMessages{}
	images := &controller.ImageReconciler{
		Events:   events,
		Registry: &registry.Client{},
		Writer:   &kube.Writer{Client: dynClient(t)},
		Policies: fixedPolicies{ps},
		Log:      slog.New(slog.DiscardHandler),
	}
	u := createApp(t, ns, "web")
	if _, err := apps(t).Namespace(ns).Update(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	setStatus(t, ns, "web", map[string]any{"summary": map[string]any{"images": []any{image + ":1.0.0"}}})

	for range 2 {
		if _, err := images.Reconcile(t.Context(), requestOf(t, ns, "web")); err != nil {
			t.Fatal(err)
		}
	}
	signed := image + ":1.0.0@" + digestOf("1.0.0")
	if got := kustomizeImages(t, ns, "web"); len(got) != 1 || got[0] != signed {
		t.Errorf("with 1.1.0 unsigned the Application carries %v, want [%s] (the signed 1.0.0, pinned)", got, signed)
	}
	var warned []string
	for _, e := range events.all() {
		if strings.HasPrefix(e, controller.EventSignatureNotVerified+": ") {
			warned = append(warned, e)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], image+":1.1.0") || !strings.Contains(warned[0], "no cosign signature") {
		t.Errorf("SignatureNotVerified Events = %q, want one naming %s:1.1.0 and why", warned, image)
	}

	signer.SignAndAttach(t, reg, "team/app", digestOf("1.1.0"), testsign.Referrer)
	images.Registry = &registry.Client{} // past the refusal's cache time
	if _, err := images.Reconcile(t.Context(), requestOf(t, ns, "web")); err != nil {
		t.Fatal(err)
	}
	want := image + ":1.1.0@" + digestOf("1.1.0")
	if got := kustomizeImages(t, ns, "web"); len(got) != 1 || got[0] != want {
		t.Errorf("once 1.1.0 is signed the Application carries %v, want [%s]", got, want)
	}
}
