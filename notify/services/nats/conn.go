package nats

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/notify"
)

// natsMaxLine bounds one protocol line read from the server (an INFO with
// a large cluster's connect_urls stays far below it).
const natsMaxLine = 1 << 20

// natsInfo is what crowsnest reads of the server's INFO.
type natsInfo struct {
	Nonce        string `json:"nonce"`
	TLSRequired  bool   `json:"tls_required"`
	TLSAvailable bool   `json:"tls_available"`
	Headers      bool   `json:"headers"`
	MaxPayload   int64  `json:"max_payload"`
}

// natsConnect is the CONNECT crowsnest sends (fields of the NATS client
// protocol).
type natsConnect struct {
	Verbose     bool   `json:"verbose"`
	Pedantic    bool   `json:"pedantic"`
	TLSRequired bool   `json:"tls_required"`
	Name        string `json:"name"`
	Lang        string `json:"lang"`
	Version     string `json:"version"`
	Protocol    int    `json:"protocol"`
	Echo        bool   `json:"echo"`
	Headers     bool   `json:"headers"`
	User        string `json:"user,omitempty"`
	Pass        string `json:"pass,omitempty"`
	Token       string `json:"auth_token,omitempty"`
	NKey        string `json:"nkey,omitempty"`
	Sig         string `json:"sig,omitempty"`
}

// publish sends one message to server u on one connection and waits for
// the PONG after it.
func (n *natsService) publish(ctx context.Context, u *url.URL, key *nkeyPair, subject string, header http.Header, payload []byte) error {
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return fmt.Errorf("%s: connecting to %s: %w", n.name, u.Host, err)
	}
	conn := raw
	defer func() { _ = conn.Close() }()
	if dl, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Unix(1, 0)) }) // cancel unblocks reads and writes
	defer stop()

	r := bufio.NewReader(conn)
	info, err := n.readInfo(ctx, u, r)
	if err != nil {
		return err
	}
	secure := u.Scheme == "tls"
	if secure && !info.TLSRequired && !info.TLSAvailable {
		return notify.Permanent(fmt.Errorf("%s: %s does not offer TLS (the url is tls://)", n.name, u.Host))
	}
	if secure || info.TLSRequired {
		tc := tls.Client(raw, n.tlsConfig(u))
		if err := tc.HandshakeContext(ctx); err != nil {
			return n.tlsError(u, err)
		}
		conn, r = tc, bufio.NewReader(tc)
	}
	hdr, err := n.headerBlock(u, info, header, len(payload))
	if err != nil {
		return err
	}
	c := natsConnect{TLSRequired: secure || info.TLSRequired, Name: "crowsnest", Lang: "go", Version: "1", Protocol: 1, Headers: true}
	n.credentials(u, key, info.Nonce, &c)
	if _, err := conn.Write(natsFrame(c, subject, hdr, payload)); err != nil {
		return n.ioError(ctx, u, "publishing", err)
	}
	return n.awaitPong(ctx, u, conn, r)
}

// readInfo reads the INFO a NATS server greets with.
func (n *natsService) readInfo(ctx context.Context, u *url.URL, r *bufio.Reader) (natsInfo, error) {
	line, err := natsReadLine(r)
	if err != nil {
		return natsInfo{}, n.ioError(ctx, u, "reading the server's INFO", err)
	}
	op, arg, _ := strings.Cut(line, " ")
	var info natsInfo
	if !strings.EqualFold(op, "INFO") || json.Unmarshal([]byte(arg), &info) != nil {
		return natsInfo{}, fmt.Errorf("%s: %s did not answer as a NATS server", n.name, u.Host)
	}
	return info, nil
}

// headerBlock is the HPUB header block of header (nil without headers),
// refused when the server takes no headers or the message is larger
// than its max_payload.
func (n *natsService) headerBlock(u *url.URL, info natsInfo, header http.Header, payloadLen int) ([]byte, error) {
	var hdr []byte
	if len(header) > 0 {
		if !info.Headers {
			return nil, notify.Permanent(fmt.Errorf("%s: %s does not support message headers", n.name, u.Host))
		}
		var b bytes.Buffer
		b.WriteString("NATS/1.0\r\n")
		_ = header.Write(&b) // sorted by name; CR and LF in values become spaces
		b.WriteString("\r\n")
		hdr = b.Bytes()
	}
	if size := int64(len(hdr) + payloadLen); info.MaxPayload > 0 && size > info.MaxPayload {
		return nil, notify.Permanent(fmt.Errorf("%s: the message (%d bytes) exceeds the server's max_payload (%d)", n.name, size, info.MaxPayload))
	}
	return hdr, nil
}

// natsFrame is what crowsnest writes in one go: CONNECT, the message (PUB,
// or HPUB with hdr) and a PING whose PONG confirms both.
func natsFrame(c natsConnect, subject string, hdr, payload []byte) []byte {
	cj, _ := json.Marshal(c)
	var out bytes.Buffer
	out.WriteString("CONNECT ")
	out.Write(cj)
	out.WriteString("\r\n")
	if hdr == nil {
		fmt.Fprintf(&out, "PUB %s %d\r\n", subject, len(payload))
	} else {
		fmt.Fprintf(&out, "HPUB %s %d %d\r\n", subject, len(hdr), len(hdr)+len(payload))
		out.Write(hdr)
	}
	out.Write(payload)
	out.WriteString("\r\nPING\r\n")
	return out.Bytes()
}

// awaitPong reads the server's answers until the PONG (answering its
// PINGs) or an -ERR.
func (n *natsService) awaitPong(ctx context.Context, u *url.URL, conn io.Writer, r *bufio.Reader) error {
	for {
		line, err := natsReadLine(r)
		if err != nil {
			return n.ioError(ctx, u, "waiting for the server to confirm", err)
		}
		op, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(op) {
		case "PONG":
			return nil
		case "PING":
			if _, err := io.WriteString(conn, "PONG\r\n"); err != nil {
				return n.ioError(ctx, u, "answering PING", err)
			}
		case "-ERR":
			return n.serverError(u, strings.Trim(strings.TrimSpace(arg), "'"))
		}
		// +OK, INFO (cluster updates): nothing to do.
	}
}

// credentials puts the authentication in c: userinfo of the URL (user and
// password, or a token) wins over the settings, as nats.go does; else
// username and password when both are set, and the nkey's signature of
// the server's nonce.
func (n *natsService) credentials(u *url.URL, key *nkeyPair, nonce string, c *natsConnect) {
	if u.User != nil {
		if pass, ok := u.User.Password(); ok {
			c.User, c.Pass = u.User.Username(), pass
		} else {
			c.Token = u.User.Username()
		}
		return
	}
	if n.s.Username != "" && n.s.Password != "" {
		c.User, c.Pass = n.s.Username, n.s.Password
	}
	if key != nil {
		c.NKey = key.public
		c.Sig = base64.RawURLEncoding.EncodeToString(ed25519.Sign(key.private, []byte(nonce)))
	}
}

// natsReadLine reads one CRLF-terminated protocol line.
func natsReadLine(r *bufio.Reader) (string, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		line = append(line, part...)
		if err == nil {
			return strings.TrimRight(string(line), "\r\n"), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return "", err
		}
		if len(line) > natsMaxLine {
			return "", errors.New("protocol line too long")
		}
	}
}

// ioError is a retryable network error, or the context's when it ended.
func (n *natsService) ioError(ctx context.Context, u *url.URL, doing string, err error) error {
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("connection closed by the server")
	}
	return fmt.Errorf("%s: %s on %s: %w", n.name, doing, u.Host, err)
}

// serverError classifies a -ERR: what the same message cannot fix
// (credentials, permissions, size, a bad subject) is permanent; the rest
// (too many connections, a server going away) is retried.
func (n *natsService) serverError(u *url.URL, msg string) error {
	err := fmt.Errorf("%s: %s refused: %s", n.name, u.Host, msg)
	low := strings.ToLower(msg)
	for _, p := range []string{"authorization violation", "authentication expired", "authentication revoked",
		"permissions violation", "maximum payload", "invalid", "parser error", "unknown protocol"} {
		if strings.Contains(low, p) {
			return notify.Permanent(err)
		}
	}
	return err
}

// tlsError: a certificate the client cannot trust stays untrusted.
func (n *natsService) tlsError(u *url.URL, err error) error {
	wrapped := fmt.Errorf("%s: TLS with %s: %w", n.name, u.Host, err)
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	var ve *tls.CertificateVerificationError
	if errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &ve) {
		return notify.Permanent(wrapped)
	}
	return wrapped
}
