package registry

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/internal/testsign"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/registry/verify"
)

// pushed pushes img to repo:tag and returns its digest.
func pushed(t *testing.T, reg *testreg.OCI, repoTag string, img interface {
	remote.Taggable
	Digest() (v1.Hash, error)
}) string {
	t.Helper()
	reg.Push(t, repoTag, img)
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func keysOf(t *testing.T, pems ...string) *verify.KeySet {
	t.Helper()
	ks, err := verify.ParseKeys(pems)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// TestVerifyCosignSignatures signs images with sigstore's signing code,
// stores the signatures where cosign does, and checks what Verify says of
// each digest through the authenticated client.
func TestVerifyCosignSignatures(t *testing.T) {
	signer := testsign.NewSigner(t, testsign.ECDSA)
	other := testsign.NewSigner(t, testsign.ECDSA)
	tests := []struct {
		name      string
		referrers bool // the registry serves the referrers API
		kind      string
		setup     func(t *testing.T, reg *testreg.OCI, s *testsign.Signer) string // returns the digest to check
		want      verify.Reason
	}{
		{name: "signed, legacy .sig tag", setup: func(t *testing.T, reg *testreg.OCI, s *testsign.Signer) string {
			t.Helper()
			d := pushed(t, reg, "app:1", testreg.Image(t, t0, ""))
			s.SignAndAttach(t, reg, "app", d, testsign.TagSchema)
			return d
		}},
		{name: "signed, OCI referrer", referrers: true, setup: func(t *testing.T, reg *testreg.OCI, s *testsign.Signer) string {
			t.Helper()
			d := pushed(t, reg, "app:1", testreg.Image(t, t0, ""))
			s.SignAndAttach(t, reg, "app", d, testsign.Referrer)
			return d
		}},
		// The pusher keeps the referrers tag schema's index
		// ("sha256-<hex>") where the registry has no referrers API.
		{name: "signed referrer, registry without referrers API (tag schema)", setup: func(t *testing.T, reg *testreg.OCI, s *testsign.Signer) string {
			t.Helper()
			d := pushed(t, reg, "app:1", testreg.Image(t, t0, ""))
			s.SignAndAttach(t, reg, "app", d, testsign.Referrer)
			return d
		}},
		{name: "RSA key", kind: testsign.RSA, setup: func(t *testing.T, reg *testreg.OCI, s *testsign.Signer) string {
			t.Helper()
			d := pushed(t, reg, "app:1", testreg.Image(t, t0, ""))
			s.SignAndAttach(t, reg, "app", d, testsign.TagSchema)
			return d
		}},
		{name: "Ed25519 key", kind: testsign.Ed25519, setup: func(t *testing.T, reg *testreg.OCI, s *testsign.Signer) string {
			t.Helper()
			d := pushed(t, reg, "app:1", testreg.Image(t, t0, ""))
			s.SignAndAttach(t, reg, "app", d, testsign.TagSchema)
			return d
		}},
		{name: "multi-platform index signed as the index digest", setup: func(t *testing.T, reg *testreg.OCI, s *testsign.Signer) string {
			t.Helper()
			d := pushed(t, reg, "app:1", testreg.Index(t, map[string]time.Time{"linux/amd64": t0, "linux/arm64": t0}))
			s.SignAndAttach(t, reg, "app", d, testsign.TagSchema)
			return d
		}},
		{name: "no signature", setup: func(t *testing.T, reg *testreg.OCI, _ *testsign.Signer) string {
			t.Helper()
			return pushed(t, reg, "app:1", testreg.Image(t, t0, ""))
		}, want: verify.ReasonNoSignature},
		{name: "wrong key", setup: func(t *testing.T, reg *testreg.OCI, _ *testsign.Signer) string {
			t.Helper()
			d := pushed(t, reg, "app:1", testreg.Image(t, t0, ""))
			other.SignAndAttach(t, reg, "app", d, testsign.TagSchema)
			return d
		}, want: verify.ReasonWrongKey},
		{name: "tampered payload", setup: func(t *testing.T, reg *testreg.OCI, s *testsign.Signer) string {
			t.Helper()
			d := pushed(t, reg, "app:1", testreg.Image(t, t0, ""))
			p := testsign.Payload(t, reg.Ref(t, "app:1"), d)
			sig := s.Sign(t, p)
			tampered := append([]byte(nil), p...)
			tampered[len(tampered)-2] ^= 1
			testsign.Attach(t, reg, "app", d, testsign.TagSchema, testsign.Sig{Payload: tampered, Signature: sig})
			return d
		}, want: verify.ReasonWrongKey},
		{name: "signature made for another digest", setup: func(t *testing.T, reg *testreg.OCI, s *testsign.Signer) string {
			t.Helper()
			signed := pushed(t, reg, "app:1", testreg.Image(t, t0, ""))
			d := pushed(t, reg, "app:2", testreg.Image(t, t0, ""))
			p := testsign.Payload(t, reg.Ref(t, "app:1"), signed)
			testsign.Attach(t, reg, "app", d, testsign.TagSchema, testsign.Sig{Payload: p, Signature: s.Sign(t, p)})
			return d
		}, want: verify.ReasonOtherDigest},
		{name: "one good signature among bad ones", referrers: true, setup: func(t *testing.T, reg *testreg.OCI, s *testsign.Signer) string {
			t.Helper()
			d := pushed(t, reg, "app:1", testreg.Image(t, t0, ""))
			other.SignAndAttach(t, reg, "app", d, testsign.Referrer)
			s.SignAndAttach(t, reg, "app", d, testsign.TagSchema)
			return d
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := signer
			if tt.kind != "" {
				s = testsign.NewSigner(t, tt.kind)
			}
			reg := testreg.StartOCI(t, testreg.OCIOptions{Auth: testreg.AuthBearer, Username: "robot", Password: "s3cret", Referrers: tt.referrers})
			digest := tt.setup(t, reg, s)
			c := &Client{Hosts: fastHosts, Auth: &staticAuth{user: "robot", pass: "s3cret"}}
			got, err := c.Verify(t.Context(), repoOf(t, reg, "app"), digest, keysOf(t, s.PublicPEM))
			if err != nil {
				t.Fatal(err)
			}
			if got.Reason != tt.want {
				t.Errorf("Verify = %q, want reason %q", got, tt.want)
			}
		})
	}
}

// TestVerifiedSelection runs selection with signatures as a filter: the
// newest tag that verifies wins, each refused one says why, and a second
// poll asks the registry nothing; after the tag cache expires only the
// tags' digests are asked again, never a verified digest's signatures.
func TestVerifiedSelection(t *testing.T) {
	signer := testsign.NewSigner(t, testsign.ECDSA)
	other := testsign.NewSigner(t, testsign.ECDSA)
	reg := testreg.StartOCI(t, testreg.OCIOptions{Referrers: true})
	d10 := pushed(t, reg, "app:1.0.0", testreg.Image(t, t0, ""))
	signer.SignAndAttach(t, reg, "app", d10, testsign.Referrer)
	// 1.1.0 was signed, then the tag moved to an unsigned image.
	signer.SignAndAttach(t, reg, "app", pushed(t, reg, "app:1.1.0", testreg.Image(t, t0, "")), testsign.TagSchema)
	pushed(t, reg, "app:1.1.0", testreg.Image(t, t0.Add(time.Hour), ""))
	other.SignAndAttach(t, reg, "app", pushed(t, reg, "app:1.2.0", testreg.Image(t, t0, "")), testsign.Referrer)
	pushed(t, reg, "app:1.3.0", testreg.Image(t, t0, ""))
	reg.Reset()

	now := t0
	promReg := prometheus.NewPedanticRegistry()
	m := NewMetrics(promReg)
	c := &Client{Hosts: fastHosts, TagTTL: time.Minute, Metrics: m, Now: func() time.Time { return now }}
	repo := repoOf(t, reg, "app")
	pol, err := policy.Compile("app", policy.Spec{Strategy: "semver"})
	if err != nil {
		t.Fatal(err)
	}
	keys := keysOf(t, signer.PublicPEM)
	sel := func(ctx context.Context) policy.Result {
		t.Helper()
		tags, err := c.Tags(ctx, repo, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := pol.SelectWith(ctx, tags, policy.Facts{Metadata: c.MetadataFunc(repo, nil), Verify: c.VerifyFunc(repo, keys)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := sel(t.Context())
	if res.Tag != "1.0.0" || res.Digest != d10 {
		t.Errorf("selected %s@%s, want 1.0.0@%s", res.Tag, res.Digest, d10)
	}
	var got []string
	for _, c := range res.Unverified {
		got = append(got, c.Tag+": "+c.Detail)
	}
	want := []string{
		"1.3.0: " + string(verify.ReasonNoSignature),
		"1.2.0: " + string(verify.ReasonWrongKey) + " (1 tried)",
		"1.1.0: " + string(verify.ReasonNoSignature),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unverified tags (-want +got):\n%s", diff)
	}
	if got := testutil.ToFloat64(m.verdicts.WithLabelValues("verified")); got != 1 {
		t.Errorf("verified checks = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.verdicts.WithLabelValues("no-signature")); got != 2 {
		t.Errorf("no-signature checks = %v, want 2", got)
	}

	reg.Reset()
	sel(t.Context())
	if n := len(reg.Requests()); n != 0 {
		t.Errorf("second poll inside the TTL made %d requests, want 0: %v", n, reg.Requests())
	}

	// After the TTL a refused digest is asked again (its signature may
	// have arrived since); the verified one is not.
	now = now.Add(2 * time.Minute)
	reg.Reset()
	sel(t.Context())
	for _, kind := range []string{"referrers", "manifest", "blob"} {
		if n := reg.Count(kind, d10[len("sha256:"):]); n != 0 {
			t.Errorf("%d %s requests for the verified digest after the TTL, want 0", n, kind)
		}
	}
}
