package nats

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// Settings are the keys of `service.nats`.
type Settings struct {
	// URL is the server, nats://host:4222 or tls://host:4222; several
	// separated by commas are tried in order. Userinfo in the URL
	// (user:pass@ or token@) wins over the keys below, as in nats.go.
	URL string `yaml:"url" json:"url,omitempty"`
	// Headers go with every message (HPUB).
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// NKey is a user's nkey seed ("SU..."): the server's nonce is signed
	// with it.
	NKey string `yaml:"nkey" json:"nkey,omitempty"`
	// Username and Password are sent when both are set.
	Username string `yaml:"username" json:"username,omitempty"`
	Password string `yaml:"password" json:"password,omitempty"`
}

// Kind describes service type nats; package services lists it.
var Kind = &svc.Kind{
	Type:     "nats",
	Settings: func() any { return &Settings{} },
	Validate: func(s any) error {
		c := s.(*Settings)
		if c.URL == "" {
			return errors.New("url: required")
		}
		var errs []error
		if !svc.IsSecretRef(c.URL) {
			if _, err := natsServers(c.URL); err != nil {
				errs = append(errs, err)
			}
		}
		if c.NKey != "" && !svc.IsSecretRef(c.NKey) {
			if _, _, err := decodeNKeySeed(c.NKey); err != nil {
				errs = append(errs, fmt.Errorf("nkey: %w", err))
			}
		}
		return errors.Join(errs...)
	},
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		c := *s.(*Settings)
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
	s       Settings
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
	servers, err := natsServers(n.s.URL)
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
		pub, priv, err := decodeNKeySeed(n.s.NKey)
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

// natsServers reads the url setting: one or more servers separated by
// commas, nats:// (or no scheme) and tls://, port 4222 unless given.
func natsServers(raw string) ([]*url.URL, error) {
	var out []*url.URL
	for _, s := range strings.Split(raw, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "://") {
			s = "nats://" + s
		}
		u, err := url.Parse(s)
		if err != nil || u.Hostname() == "" {
			return nil, errors.New("url: want nats://host:port or tls://host:port")
		}
		switch u.Scheme {
		case "nats", "tls":
		case "ws", "wss":
			return nil, errors.New("url: NATS over websockets (ws://, wss://) is not supported by crowsnest: use nats:// or tls://")
		default:
			return nil, errors.New("url: want nats://host:port or tls://host:port")
		}
		if u.Port() == "" {
			u.Host = net.JoinHostPort(u.Hostname(), "4222")
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, errors.New("url: required")
	}
	return out, nil
}

// tlsConfig is the client's TLS configuration for server u.
func (n *natsService) tlsConfig(u *url.URL) *tls.Config {
	return &tls.Config{ServerName: u.Hostname(), RootCAs: n.roots, MinVersion: tls.VersionTLS12}
}
