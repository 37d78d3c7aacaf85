package servicetypes

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// NATS is service type nats.
var NATS = &Type{
	Name:     "nats",
	Settings: func() Settings { return &NATSSettings{} },
}

// NATSSettings are the keys of `service.nats`.
type NATSSettings struct {
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

// Check reports a missing or unusable url and an nkey that is no user
// seed.
func (s *NATSSettings) Check() error {
	if s.URL == "" {
		return errors.New("url: required")
	}
	var errs []error
	if !IsSecretRef(s.URL) {
		if _, err := s.Servers(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.NKey != "" && !IsSecretRef(s.NKey) {
		if _, _, err := NATSUserSeed(s.NKey); err != nil {
			errs = append(errs, fmt.Errorf("nkey: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Servers reads the url setting: one or more servers separated by
// commas, nats:// (or no scheme) and tls://, port 4222 unless given.
func (s *NATSSettings) Servers() ([]*url.URL, error) {
	var out []*url.URL
	for _, server := range strings.Split(s.URL, ",") {
		server = strings.TrimSpace(server)
		if server == "" {
			continue
		}
		if !strings.Contains(server, "://") {
			server = "nats://" + server
		}
		u, err := url.Parse(server)
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
