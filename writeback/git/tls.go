package git

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/url"
	"strings"
)

// TLS is the HTTPS trust for one Git server.
type TLS struct {
	// CABundle holds PEM CA certificates trusted besides the system roots.
	CABundle []byte
	// InsecureSkipVerify turns certificate verification off for this
	// server only.
	InsecureSkipVerify bool
}

// tlsFor returns the trust configured for repoURL's host; the zero TLS
// (the system roots) when none is, or for SSH URLs.
func (w *Writer) tlsFor(repoURL string) TLS {
	if len(w.TLS) == 0 {
		return TLS{}
	}
	u, err := url.Parse(repoURL)
	if err != nil || u.Scheme != "https" {
		return TLS{}
	}
	host := strings.ToLower(u.Host)
	if t, ok := w.TLS[host]; ok {
		return t
	}
	// "host:443" and "host" name the same server.
	if h, port, found := strings.Cut(host, ":"); found && port == "443" {
		return w.TLS[h]
	}
	return w.TLS[host+":443"]
}

// untrustedCertificate says whether err is a failed verification of the
// server's certificate (unknown authority, wrong host, expired).
func untrustedCertificate(err error) bool {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) || errors.As(err, &verify) ||
		strings.Contains(err.Error(), "x509: certificate")
}

// config is t as a TLS client configuration: the CA bundle trusted
// besides the system roots, as for Git.
func (t TLS) config() (*tls.Config, error) {
	// InsecureSkipVerify is the operator's choice for this server.
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify}
	if len(t.CABundle) > 0 {
		roots, err := x509.SystemCertPool()
		if err != nil || roots == nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(t.CABundle) {
			return nil, errors.New("the Git server's CA bundle holds no PEM certificate")
		}
		cfg.RootCAs = roots
	}
	return cfg, nil
}
