package imageupdaters

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/crowsnest-dev/crowsnest/internal/testsign"
)

// countingSecrets counts the reads of its Secrets.
type countingSecrets struct {
	fakeSecrets
	reads atomic.Int32
}

func (c *countingSecrets) Get(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	c.reads.Add(1)
	return c.fakeSecrets.Get(ctx, namespace, name)
}

// A key is read once for every Application and image that names it, for
// KeyTTL; a key that could not be read is read again at the next
// reconcile (a Secret created later is picked up at once).
func TestVerifyKeyRead(t *testing.T) {
	secrets := &countingSecrets{fakeSecrets: fakeSecrets{"team-a/cosign": {"cosign.pub": []byte(testsign.NewSigner(t, testsign.Ed25519).PublicPEM)}}}
	s := newSet(t, iu("shop", `{imagesVerification: {cosignKey: {secretName: cosign, key: cosign.pub}}, applicationRefs: [`+webGlobRef+`]}`),
		iu("other", `{imagesVerification: {cosignKey: {secretName: later, key: cosign.pub}}, applicationRefs: [{namePattern: "shop-*", images: [`+apiImage+`]}]}`))
	s.Secrets = secrets
	for range 3 {
		for _, name := range []string{"shop-web", "shop-api"} {
			spec, _, _ := s.Match(t.Context(), annotated(name, nil))
			if len(spec.Images) != 1 || spec.Images[0].Verify == nil {
				t.Fatalf("%s: images %v, want web, verified", name, factImages(spec))
			}
		}
	}
	// cosign once; later (missing) at each of the six Matches.
	if got := secrets.reads.Load(); got != 7 {
		t.Errorf("%d Secret reads, want 7 (cosign once, the missing one every time)", got)
	}
	secrets.fakeSecrets["team-a/later"] = secrets.fakeSecrets["team-a/cosign"]
	spec, errs, _ := s.Match(t.Context(), shopWeb())
	if len(spec.Images) != 2 || len(errs) != 0 {
		t.Errorf("once the Secret exists: images %v, errors %v; want web and api", factImages(spec), errs)
	}
}
