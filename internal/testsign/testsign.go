package testsign

import (
	"bytes"
	"crypto"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// cosign's signature format (its SIGNATURE_SPEC.md), as the verifier
// under test reads it; spelled here on their own so a typo on one side
// is not hidden by sharing a constant.
const (
	simpleSigning      = "application/vnd.dev.cosign.simplesigning.v1+json"
	signatureKey       = "dev.cosignproject.cosign/signature"
	sigArtifactType    = "application/vnd.dev.cosign.artifact.sig.v1+json"
	ociImageConfigType = "application/vnd.oci.image.config.v1+json"
)

// Key kinds NewSigner makes.
const (
	ECDSA   = "ecdsa-p256"
	RSA     = "rsa-2048"
	Ed25519 = "ed25519"
)

// Signer is a key pair: its private half signs, PublicPEM is what an
// operator configures.
type Signer struct {
	signer    signature.Signer
	PublicPEM string
}

// NewSigner makes a fresh key pair of kind with sigstore's code.
func NewSigner(tb testing.TB, kind string) *Signer {
	tb.Helper()
	var (
		s   signature.SignerVerifier
		err error
	)
	switch kind {
	case ECDSA:
		s, _, err = signature.NewECDSASignerVerifier(elliptic.P256(), rand.Reader, crypto.SHA256)
	case RSA:
		s, _, err = signature.NewRSAPKCS1v15SignerVerifier(rand.Reader, 2048, crypto.SHA256)
	case Ed25519:
		s, _, err = signature.NewED25519SignerVerifier(rand.Reader)
	default:
		tb.Fatalf("unknown key kind %q", kind)
	}
	if err != nil {
		tb.Fatal(err)
	}
	pub, err := s.PublicKey()
	if err != nil {
		tb.Fatal(err)
	}
	pemBytes, err := cryptoutils.MarshalPublicKeyToPEM(pub)
	if err != nil {
		tb.Fatal(err)
	}
	return &Signer{signer: s, PublicPEM: string(pemBytes)}
}

// Payload is cosign's simple signing payload for ref@digest.
func Payload(tb testing.TB, ref name.Reference, digest string) []byte {
	tb.Helper()
	d, err := name.NewDigest(ref.Context().Name() + "@" + digest)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := payload.Cosign{Image: d}.MarshalJSON()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Sign signs payload as cosign does and returns the base64 signature.
func (s *Signer) Sign(tb testing.TB, p []byte) string {
	tb.Helper()
	sig, err := s.signer.SignMessage(bytes.NewReader(p))
	if err != nil {
		tb.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

// Sig is one signature layer: a payload and the signature put beside it
// (which need not be over it, to test tampering).
type Sig struct {
	Payload   []byte
	Signature string
}

// Mode is where a signature manifest is stored.
type Mode int

// Modes: cosign's legacy "sha256-<hex>.sig" tag, or an OCI 1.1 referrer
// of the signed digest.
const (
	TagSchema Mode = iota
	Referrer
)

// Attach stores a signature manifest holding sigs for repo@digest on reg.
func Attach(tb testing.TB, reg *testreg.OCI, repo, digest string, mode Mode, sigs ...Sig) {
	tb.Helper()
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.MediaType(ociImageConfigType))
	for _, s := range sigs {
		layer := static.NewLayer(s.Payload, types.MediaType(simpleSigning))
		var err error
		img, err = mutate.Append(img, mutate.Addendum{Layer: layer, Annotations: map[string]string{signatureKey: s.Signature}})
		if err != nil {
			tb.Fatal(err)
		}
	}
	switch mode {
	case TagSchema:
		reg.Push(tb, repo+":"+strings.Replace(digest, ":", "-", 1)+".sig", img)
	case Referrer:
		h, err := v1.NewHash(digest)
		if err != nil {
			tb.Fatal(err)
		}
		img = mutate.ConfigMediaType(img, types.MediaType(sigArtifactType))
		img = mutate.Subject(img, v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: h, Size: 1}).(v1.Image)
		d, err := img.Digest()
		if err != nil {
			tb.Fatal(err)
		}
		reg.Push(tb, repo+"@"+d.String(), img)
	}
}

// SignAndAttach signs repo@digest with s and stores the signature.
func (s *Signer) SignAndAttach(tb testing.TB, reg *testreg.OCI, repo, digest string, mode Mode) {
	tb.Helper()
	p := Payload(tb, reg.Ref(tb, repo+":x"), digest)
	Attach(tb, reg, repo, digest, mode, Sig{Payload: p, Signature: s.Sign(tb, p)})
}
