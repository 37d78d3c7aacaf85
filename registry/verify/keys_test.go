package verify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
)

func pemOf(t *testing.T, typ string, der []byte) string {
	t.Helper()
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

func TestParseKeys(t *testing.T) {
	k1, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub := func(k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		return pemOf(t, "PUBLIC KEY", der)
	}
	priv, err := x509.MarshalECPrivateKey(k1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		pems    []string
		wantErr string
		is      error
	}{
		{name: "two keys", pems: []string{pub(k1), pub(k2)}},
		{name: "none", wantErr: "no public key"},
		{name: "kubernetes secret reference", pems: []string{"k8s://argocd/cosign"}, is: ErrKeyReference},
		{name: "KMS reference", pems: []string{" awskms:///arn:aws:kms:eu-west-1:1:key/x"}, is: ErrKeyReference},
		{name: "private key", pems: []string{pemOf(t, "EC PRIVATE KEY", priv)}, wantErr: `public key 0: PEM block "EC PRIVATE KEY", want PUBLIC KEY`},
		{name: "not PEM", pems: []string{pub(k1), "cosign.pub"}, wantErr: "public key 1: not a PEM public key"},
		{name: "two blocks in one entry", pems: []string{pub(k1) + pub(k2)}, wantErr: "more than one PEM block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks, err := ParseKeys(tt.pems)
			switch {
			case tt.is != nil:
				if !errors.Is(err, tt.is) {
					t.Fatalf("err = %v, want %v", err, tt.is)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			default:
				if ks.Len() != len(tt.pems) {
					t.Errorf("Len = %d, want %d", ks.Len(), len(tt.pems))
				}
			}
		})
	}
	a, err := ParseKeys([]string{pub(k1), pub(k2)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseKeys([]string{pub(k2), pub(k1)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseKeys([]string{pub(k1)})
	if err != nil {
		t.Fatal(err)
	}
	if a.Fingerprint() != b.Fingerprint() || a.Fingerprint() == c.Fingerprint() {
		t.Errorf("fingerprints: same set in two orders %q %q, other set %q", a.Fingerprint(), b.Fingerprint(), c.Fingerprint())
	}
}
