package git

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/crowsnest-dev/crowsnest/internal/bodycap"
)

// maxErrorBody bounds what is read of a Git server's answer with a
// status other than 2xx. go-git reads the whole body into its error
// (plumbing/transport/http NewErr) and remoteError then hides it; the
// server may be anything an Application names, and must not make
// crowsnest hold a body of any size to say "HTTP 403".
const maxErrorBody = 64 << 10

// maxAdvertisement bounds a server's list of refs (the answer to
// info/refs), which go-git reads whole into memory before anything else:
// a server an Application names could send one without end. A
// repository with 100,000 branches and tags lists about 10 MiB. A
// variable so that tests can lower it.
var maxAdvertisement int64 = 64 << 20

// ErrRefsTooLarge says a Git server's list of refs is over
// maxAdvertisement; asking again gets the same answer.
var ErrRefsTooLarge = errors.New("the server's list of refs is too large")

// go-git picks the transport of a URL's scheme from a process-wide table;
// crowsnest's Git reads and writes (write-back, the notification repo
// helpers) all go through it.
func init() {
	t := boundedHTTP{base: http.DefaultTransport.(*http.Transport)}
	client.InstallProtocol("http", t)
	client.InstallProtocol("https", t)
}

// boundedHTTP is go-git's HTTP transport over boundedBodies. go-git
// applies an endpoint's TLS and proxy settings only to a client whose
// transport is an *http.Transport, so they are applied here instead: a
// session whose endpoint has any gets a configured clone of base, as
// go-git itself would make, and an endpoint without them.
type boundedHTTP struct {
	base *http.Transport
}

var _ transport.Transport = boundedHTTP{}

// NewUploadPackSession starts a fetch.
func (b boundedHTTP) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	c, ep, err := b.client(ep)
	if err != nil {
		return nil, err
	}
	return c.NewUploadPackSession(ep, auth)
}

// NewReceivePackSession starts a push.
func (b boundedHTTP) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	c, ep, err := b.client(ep)
	if err != nil {
		return nil, err
	}
	return c.NewReceivePackSession(ep, auth)
}

func (b boundedHTTP) client(ep *transport.Endpoint) (transport.Transport, *transport.Endpoint, error) {
	rt := b.base
	if len(ep.CaBundle) > 0 || ep.InsecureSkipTLS || len(ep.ClientCert) > 0 || ep.Proxy.URL != "" {
		rt = b.base.Clone()
		if err := configureTransport(rt, ep); err != nil {
			return nil, nil, err
		}
		plain := *ep
		plain.CaBundle, plain.InsecureSkipTLS, plain.ClientCert, plain.ClientKey = nil, false, nil, nil
		plain.Proxy = transport.ProxyOptions{}
		ep = &plain
	}
	return githttp.NewClient(&http.Client{Transport: boundedBodies{base: rt}}), ep, nil
}

// configureTransport applies the endpoint's trust, client certificate and
// proxy to t, with go-git's meaning: a CA bundle is trusted besides the
// system roots.
func configureTransport(t *http.Transport, ep *transport.Endpoint) error {
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if len(ep.ClientCert) > 0 && len(ep.ClientKey) > 0 {
		pair, err := tls.X509KeyPair(ep.ClientCert, ep.ClientKey)
		if err != nil {
			return fmt.Errorf("reading the client certificate: %w", err)
		}
		t.TLSClientConfig.Certificates = []tls.Certificate{pair}
	}
	if len(ep.CaBundle) > 0 {
		roots, err := x509.SystemCertPool()
		if err != nil || roots == nil {
			roots = x509.NewCertPool()
		}
		roots.AppendCertsFromPEM(ep.CaBundle)
		t.TLSClientConfig.RootCAs = roots
	}
	if ep.InsecureSkipTLS {
		// Asked for this server by the operator (TLS.InsecureSkipVerify).
		t.TLSClientConfig.InsecureSkipVerify = true
	}
	if ep.Proxy.URL != "" {
		u, err := ep.Proxy.FullURL()
		if err != nil {
			return fmt.Errorf("reading the proxy URL: %w", err)
		}
		t.Proxy = http.ProxyURL(u)
	}
	return nil
}

// boundedBodies cuts the body of every answer other than 2xx at
// maxErrorBody, and fails a ref advertisement past maxAdvertisement;
// packs pass whole.
type boundedBodies struct {
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (b boundedBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := b.base.RoundTrip(req)
	switch {
	case err != nil || res.Body == nil:
		return res, err
	case res.StatusCode/100 != 2:
		res.Body = limitedBody{Reader: io.LimitReader(res.Body, maxErrorBody), Closer: res.Body}
	case strings.HasSuffix(req.URL.Path, "/info/refs"):
		res.Body = &bodycap.Reader{ReadCloser: res.Body, Left: maxAdvertisement,
			Err: fmt.Errorf("%w (over %d bytes)", ErrRefsTooLarge, maxAdvertisement)}
	}
	return res, nil
}

// limitedBody reads a prefix of a body and closes the whole of it.
type limitedBody struct {
	io.Reader
	io.Closer
}
