package verify

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxKeys bounds the public keys of one key set: a policy names a few
// signers, not a directory of them.
const MaxKeys = 16

// ErrKeyReference means a key is named by a reference to a key service
// (cosign's k8s://, awskms://, gcpkms://, azurekms://, hashivault://),
// which crowsnest does not read.
var ErrKeyReference = errors.New("key service references are not supported: give the PEM public key")

// keyServiceSchemes are cosign's key references other than a file.
var keyServiceSchemes = []string{"k8s://", "awskms://", "gcpkms://", "azurekms://", "hashivault://", "pkcs11:"}

// KeySet is the public keys a signature may be made with. Its
// Fingerprint names the set, so verification results are remembered per
// digest and set.
type KeySet struct {
	keys        []crypto.PublicKey
	fingerprint string
}

// ParseKeys reads PEM public keys (ECDSA P-256/P-384/P-521, RSA, Ed25519:
// what cosign's key pairs and `cosign public-key` write). A private key,
// a certificate, a key service reference or text that is not PEM is an
// error naming the key's index.
func ParseKeys(pems []string) (*KeySet, error) {
	if len(pems) == 0 {
		return nil, errors.New("no public key")
	}
	if len(pems) > MaxKeys {
		return nil, fmt.Errorf("%d public keys, at most %d", len(pems), MaxKeys)
	}
	ks := &KeySet{}
	var sums []string
	for i, s := range pems {
		k, der, err := ParseKey(s)
		if err != nil {
			return nil, fmt.Errorf("public key %d: %w", i, err)
		}
		ks.keys = append(ks.keys, k)
		sum := sha256.Sum256(der)
		sums = append(sums, hex.EncodeToString(sum[:]))
	}
	slices.Sort(sums)
	sums = slices.Compact(sums)
	sum := sha256.Sum256([]byte(strings.Join(sums, ",")))
	ks.fingerprint = hex.EncodeToString(sum[:])
	return ks, nil
}

// ParseKey reads one PEM public key and returns it with its DER bytes.
func ParseKey(s string) (crypto.PublicKey, []byte, error) {
	t := strings.TrimSpace(s)
	for _, scheme := range keyServiceSchemes {
		if strings.HasPrefix(t, scheme) {
			return nil, nil, fmt.Errorf("%q: %w", scheme, ErrKeyReference)
		}
	}
	block, rest := pem.Decode([]byte(t))
	if block == nil {
		return nil, nil, errors.New("not a PEM public key")
	}
	if strings.TrimSpace(string(rest)) != "" {
		return nil, nil, errors.New("more than one PEM block: give one key per entry")
	}
	if block.Type != "PUBLIC KEY" {
		return nil, nil, fmt.Errorf("PEM block %q, want PUBLIC KEY", block.Type)
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing public key: %w", err)
	}
	switch k := k.(type) {
	case *ecdsa.PublicKey, ed25519.PublicKey:
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return nil, nil, fmt.Errorf("RSA key of %d bits, at least 2048", k.N.BitLen())
		}
	default:
		return nil, nil, fmt.Errorf("unsupported key type %T", k)
	}
	return k, block.Bytes, nil
}

// Fingerprint names the set: the same keys in any order give the same
// value.
func (k *KeySet) Fingerprint() string { return k.fingerprint }

// Len is the number of keys.
func (k *KeySet) Len() int { return len(k.keys) }

// verifies reports whether one of the keys signed payload with sig, as
// cosign signs: SHA-256 of the payload with ECDSA (ASN.1) or RSA
// PKCS #1 v1.5, the payload itself with Ed25519.
func (k *KeySet) verifies(payload, sig []byte) bool {
	digest := sha256.Sum256(payload)
	for _, key := range k.keys {
		switch key := key.(type) {
		case *ecdsa.PublicKey:
			if ecdsa.VerifyASN1(key, digest[:], sig) {
				return true
			}
		case *rsa.PublicKey:
			if rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig) == nil {
				return true
			}
		case ed25519.PublicKey:
			if ed25519.Verify(key, payload, sig) {
				return true
			}
		}
	}
	return false
}
