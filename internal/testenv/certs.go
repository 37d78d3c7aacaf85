package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certLifetime is long enough for any test run and short enough that a
// leaked key is worthless soon.
const certLifetime = 24 * time.Hour

// pki holds the files the kube-apiserver is started with and the CA the
// test clients trust.
type pki struct {
	caPEM         []byte
	servingCert   string
	servingKey    string
	saPrivateKey  string
	saPublicKey   string
	tokenAuthFile string
	adminToken    string
}

// writePKI generates a CA, a serving certificate for 127.0.0.1 and localhost,
// a service-account signing key pair and a static token file with one admin
// token, all under dir.
func writePKI(dir string) (*pki, error) {
	now := time.Now()
	caKey, caCert, err := newCA(now)
	if err != nil {
		return nil, err
	}
	srvKey, srvDER, err := newServingCert(caCert, caKey, now)
	if err != nil {
		return nil, err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating service-account key: %w", err)
	}

	p := &pki{
		caPEM:         pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caCert.Raw}),
		servingCert:   filepath.Join(dir, "apiserver.crt"),
		servingKey:    filepath.Join(dir, "apiserver.key"),
		saPrivateKey:  filepath.Join(dir, "sa.key"),
		saPublicKey:   filepath.Join(dir, "sa.pub"),
		tokenAuthFile: filepath.Join(dir, "tokens.csv"),
		adminToken:    rand.Text(),
	}
	srvPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER})
	srvKeyPEM, err := ecKeyPEM(srvKey)
	if err != nil {
		return nil, err
	}
	saKeyPEM, err := ecKeyPEM(saKey)
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("encoding service-account public key: %w", err)
	}
	files := map[string][]byte{
		p.servingCert:   srvPEM,
		p.servingKey:    srvKeyPEM,
		p.saPrivateKey:  saKeyPEM,
		p.saPublicKey:   pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),
		p.tokenAuthFile: fmt.Appendf(nil, "%s,crowsnest-admin,crowsnest-admin,\"system:masters\"\n", p.adminToken),
	}
	for name, data := range files {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return p, nil
}

// newCA makes the self-signed CA the test clients trust.
func newCA(now time.Time) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "crowsnest-testenv-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("creating CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing CA certificate: %w", err)
	}
	return caKey, caCert, nil
}

// newServingCert makes the kube-apiserver's certificate for 127.0.0.1
// and localhost, signed by the CA; it returns the key and the DER.
func newServingCert(caCert *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time) (*ecdsa.PrivateKey, []byte, error) {
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating serving key: %w", err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("creating serving certificate: %w", err)
	}
	return srvKey, srvDER, nil
}

func ecKeyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("encoding EC key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}
