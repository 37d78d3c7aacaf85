package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types and annotations of cosign's signature format
// (sigstore/cosign specs/SIGNATURE_SPEC.md): each signature is a layer
// whose blob is the signed payload and whose annotation holds the
// base64 signature.
const (
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	SignatureAnnotation    = "dev.cosignproject.cosign/signature"
	// SignatureArtifactType is the artifactType cosign gives a signature
	// manifest it attaches as an OCI 1.1 referrer.
	SignatureArtifactType = "application/vnd.dev.cosign.artifact.sig.v1+json"
	// payloadType is the critical.type of a cosign image signature.
	payloadType = "cosign container image signature"
)

// Bounds on what a repository may make verification read: a few
// signatures per digest, small payloads.
const (
	MaxSignatureManifests  = 16
	MaxSignaturesPerDigest = 64
	MaxPayloadBytes        = 64 << 10
)

// ErrNotFound is what a Source returns for a manifest that does not
// exist: a digest without a signature tag.
var ErrNotFound = errors.New("not found")

// Source reads a repository's signature artifacts. The registry client
// implements it on its authenticated, paced path.
type Source interface {
	// Referrers lists the manifests that refer to digest: the OCI 1.1
	// referrers API, or its tag schema where the registry lacks it.
	Referrers(ctx context.Context, digest string) ([]v1.Descriptor, error)
	// Manifest reads a manifest by digest or tag; ErrNotFound (wrapped)
	// when there is none.
	Manifest(ctx context.Context, ref string) ([]byte, error)
	// Blob reads at most limit bytes of a blob.
	Blob(ctx context.Context, digest string, limit int64) ([]byte, error)
}

// Reason says why a digest did not pass; tests, Events and `crowsnest
// test` output name it.
type Reason string

// Reasons a digest is refused.
const (
	ReasonNoSignature Reason = "no cosign signature"
	ReasonWrongKey    Reason = "no signature verifies with the configured keys"
	ReasonOtherDigest Reason = "signed payload names another digest"
	ReasonBadPayload  Reason = "signed payload is not a cosign image signature"
)

// Verdict is the outcome for one digest: Reason is empty when it passed.
type Verdict struct {
	Reason Reason
	// Detail adds what was seen: the other digest, the count of
	// signatures tried.
	Detail string
}

// OK reports whether the digest passed.
func (v Verdict) OK() bool { return v.Reason == "" }

// String is the reason with its detail.
func (v Verdict) String() string {
	if v.OK() {
		return "verified"
	}
	if v.Detail == "" {
		return string(v.Reason)
	}
	return string(v.Reason) + " (" + v.Detail + ")"
}

// signature is one candidate: a payload and the signature over it.
type signature struct {
	payload, sig []byte
}

// Check decides whether digest carries a cosign signature made by one of
// keys over a payload naming digest. Signatures are looked for among the
// digest's OCI referrers first, then under cosign's "sha256-<hex>.sig"
// tag. For a multi-platform image the digest is the index's, which is
// what cosign signs. Registry failures are errors; a missing or bad
// signature is a Verdict.
func Check(ctx context.Context, src Source, digest string, keys *KeySet) (Verdict, error) {
	h, err := v1.NewHash(digest)
	if err != nil {
		return Verdict{}, fmt.Errorf("digest %q: %w", digest, err)
	}
	sigs, err := signatures(ctx, src, h)
	if err != nil {
		return Verdict{}, err
	}
	if len(sigs) == 0 {
		return Verdict{Reason: ReasonNoSignature}, nil
	}
	best := Verdict{Reason: ReasonWrongKey, Detail: fmt.Sprintf("%d tried", len(sigs))}
	for _, s := range sigs {
		if !keys.verifies(s.payload, s.sig) {
			continue
		}
		signed, err := signedDigest(s.payload)
		if err != nil {
			best = Verdict{Reason: ReasonBadPayload, Detail: err.Error()}
			continue
		}
		if signed == digest {
			return Verdict{}, nil
		}
		best = Verdict{Reason: ReasonOtherDigest, Detail: signed}
	}
	return best, nil
}

// signatures gathers the candidates for h: from every cosign signature
// manifest among its referrers, then from the legacy tag.
func signatures(ctx context.Context, src Source, h v1.Hash) ([]signature, error) {
	refs, err := src.Referrers(ctx, h.String())
	if err != nil {
		return nil, fmt.Errorf("listing referrers of %s: %w", h, err)
	}
	var sigs []signature
	manifests := 0
	for i := range refs {
		d := &refs[i]
		if d.ArtifactType != SignatureArtifactType || manifests >= MaxSignatureManifests {
			continue
		}
		manifests++
		b, err := src.Manifest(ctx, d.Digest.String())
		if err != nil {
			return nil, fmt.Errorf("reading signature manifest %s: %w", d.Digest, err)
		}
		if sigs, err = appendSignatures(ctx, src, sigs, b); err != nil {
			return nil, err
		}
	}
	tag := h.Algorithm + "-" + h.Hex + ".sig"
	b, err := src.Manifest(ctx, tag)
	switch {
	case errors.Is(err, ErrNotFound):
		return sigs, nil
	case err != nil:
		return nil, fmt.Errorf("reading signature tag %s: %w", tag, err)
	}
	return appendSignatures(ctx, src, sigs, b)
}

// appendSignatures reads the signature layers of one cosign signature
// manifest; other layers are ignored.
func appendSignatures(ctx context.Context, src Source, sigs []signature, manifest []byte) ([]signature, error) {
	m, err := v1.ParseManifest(bytes.NewReader(manifest))
	if err != nil {
		return nil, fmt.Errorf("parsing signature manifest: %w", err)
	}
	for i := range m.Layers {
		l := &m.Layers[i]
		if l.MediaType != types.MediaType(SimpleSigningMediaType) || len(sigs) >= MaxSignaturesPerDigest {
			continue
		}
		b64, ok := l.Annotations[SignatureAnnotation]
		if !ok {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || l.Size > MaxPayloadBytes {
			continue // not a signature anyone could have made: not a candidate
		}
		payload, err := src.Blob(ctx, l.Digest.String(), MaxPayloadBytes)
		if err != nil {
			return nil, fmt.Errorf("reading signature payload %s: %w", l.Digest, err)
		}
		if sum := sha256.Sum256(payload); l.Digest.Algorithm != "sha256" || hex.EncodeToString(sum[:]) != l.Digest.Hex {
			continue // the blob is not the layer the manifest names
		}
		sigs = append(sigs, signature{payload: payload, sig: sig})
	}
	return sigs, nil
}

// simpleSigning is the part of cosign's payload that binds a signature
// to an image.
type simpleSigning struct {
	Critical struct {
		Type  string `json:"type"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
	} `json:"critical"`
}

// signedDigest is the digest a verified payload names.
func signedDigest(payload []byte) (string, error) {
	var p simpleSigning
	if err := json.Unmarshal(payload, &p); err != nil {
		return "", errors.New("not JSON")
	}
	if !strings.EqualFold(p.Critical.Type, payloadType) {
		return "", fmt.Errorf("critical.type %q", p.Critical.Type)
	}
	if p.Critical.Image.DockerManifestDigest == "" {
		return "", errors.New("no critical.image.docker-manifest-digest")
	}
	return p.Critical.Image.DockerManifestDigest, nil
}
