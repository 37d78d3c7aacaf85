package nats

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// Kind describes service type nats; package services lists it.
var Kind = &svc.Kind{
	Name: "nats",
	Type: servicetypes.NATS,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		c := *s.(*servicetypes.NATSSettings)
		timeout := o.Timeout
		if timeout <= 0 {
			timeout = svc.DefaultTimeout
		}
		return &natsService{name: name, s: c, timeout: timeout, dryRun: o.Transport}, nil
	},
}

// natsService publishes the message on the recipient's subject, one
// connection per send as Argo CD Notifications does: INFO, CONNECT with
// the credentials, PUB (HPUB with headers), then PING, and the PONG that
// tells the server processed everything before it. Core NATS has no
// per-message acknowledgement; the PONG is the closest: the server took
// the message (and did not refuse the connection or the subject).
type natsService struct {
	name    string
	s       servicetypes.NATSSettings
	timeout time.Duration
	// dryRun, when set (`notify template render --service`), gets each
	// publish as a pseudo HTTP request (method PUB, URL
	// nats://server/subject, the headers and the payload) instead of a
	// connection: nothing leaves the process.
	dryRun http.RoundTripper
	// roots verifies TLS servers; the system's when nil (tests set it).
	roots *x509.CertPool
}

func (n *natsService) Send(ctx context.Context, msg notify.Notification, d notify.Destination) (notify.Receipt, error) {
	subject := d.Recipient
	if subject == "" || strings.ContainsAny(subject, " \t\r\n") {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: the recipient must be a NATS subject without spaces", n.name))
	}
	servers, err := n.s.Servers()
	if err != nil {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: %w", n.name, err))
	}
	header := http.Header{}
	for k, v := range n.s.Headers {
		header[k] = []string{v} // as written: NATS headers are case-sensitive
	}
	if n.dryRun != nil {
		return n.record(ctx, servers[0], subject, header, msg.Message)
	}
	var seed *nkeyPair
	if n.s.NKey != "" {
		pub, priv, err := servicetypes.NATSUserSeed(n.s.NKey)
		if err != nil {
			return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: nkey: %w", n.name, err))
		}
		seed = &nkeyPair{public: pub, private: priv}
	}
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	var last error
	for _, u := range servers {
		err := n.publish(ctx, u, seed, subject, header, []byte(msg.Message))
		if err == nil {
			return notify.Receipt{Detail: "published to " + u.Host}, nil
		}
		if notify.IsPermanent(err) || ctx.Err() != nil {
			return notify.Receipt{}, err
		}
		last = err
	}
	return notify.Receipt{}, last
}

// record hands one publish to the dry-run transport.
func (n *natsService) record(ctx context.Context, server *url.URL, subject string, header http.Header, payload string) (notify.Receipt, error) {
	method := "PUB"
	if len(header) > 0 {
		method = "HPUB"
	}
	u := url.URL{Scheme: server.Scheme, Host: server.Host, Path: "/" + subject}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), strings.NewReader(payload))
	if err != nil {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("%s: %w", n.name, err))
	}
	req.Header = header
	resp, err := n.dryRun.RoundTrip(req)
	if err != nil {
		return notify.Receipt{}, err
	}
	_ = resp.Body.Close()
	return notify.Receipt{Detail: "dry run"}, nil
}

// tlsConfig is the client's TLS configuration for server u.
func (n *natsService) tlsConfig(u *url.URL) *tls.Config {
	return &tls.Config{ServerName: u.Hostname(), RootCAs: n.roots, MinVersion: tls.VersionTLS12}
}
