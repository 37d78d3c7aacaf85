// Package email is crowsnest's email sender (service type email): one
// SMTP session per message, STARTTLS or implicit TLS (credentials never
// over a plain connection), PLAIN or LOGIN auth, the delivery ID as the
// Message-ID, and 5xx replies dead-lettered at once. A svc.Options.Mailer
// takes the composed message instead of an SMTP session (`notify template
// render`). Its settings are config.EmailService; Kind is how package
// services builds it.
package email

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// TLSMode is how the email service protects the SMTP connection.
type TLSMode string

// TLS modes. Credentials are never sent over a plain connection, so
// TLSNone is only for relays that need no AUTH (localhost, a sidecar).
const (
	TLSStartTLS TLSMode = "starttls" // upgrade with STARTTLS (port 587)
	TLSImplicit TLSMode = "tls"      // TLS from the first byte (port 465)
	TLSNone     TLSMode = "none"
)

// DefaultTimeout bounds one SMTP session, connect to QUIT.
const DefaultTimeout = 30 * time.Second

// Kind describes service type email; package services lists it.
var Kind = &svc.Kind{
	Name: config.ServiceEmail,
	New: func(name string, s any, o svc.Options) (notify.Service, error) {
		return New(name, s.(*config.EmailService), o)
	},
}

// Sender sends notifications over SMTP: the message is the body (HTML
// when it starts with '<', as the email template's body is documented
// to, else text) and email.subject the subject.
type Sender struct {
	name      string
	addr      string
	host      string
	from      *mail.Address
	mode      TLSMode
	username  string
	password  string
	mechanism string
	tls       *tls.Config
	timeout   time.Duration
	now       func() time.Time
	// mailer, when set, takes each message in place of an SMTP session
	// (svc.Options.Mailer).
	mailer svc.Mailer
}

var _ notify.Service = (*Sender)(nil)

// New builds the email service called name from its settings (STARTTLS
// unless they say otherwise); its password reference must be resolved.
// With a username it authenticates with PLAIN, or LOGIN when the server
// offers only that, and never without TLS.
func New(name string, c *config.EmailService, o svc.Options) (*Sender, error) {
	if c.Host == "" || c.Port <= 0 || c.Port > 65535 {
		return nil, fmt.Errorf("email %s: need host and port", name)
	}
	f, err := mail.ParseAddress(c.From)
	if err != nil {
		return nil, fmt.Errorf("email %s: from %q: %w", name, c.From, err)
	}
	mode := TLSMode(cmp.Or(c.TLS, string(TLSStartTLS)))
	switch mode {
	case TLSStartTLS, TLSImplicit, TLSNone:
	default:
		return nil, fmt.Errorf("email %s: tls mode %q is not starttls, tls or none", name, mode)
	}
	e := &Sender{name: name, host: c.Host, addr: net.JoinHostPort(c.Host, strconv.Itoa(c.Port)), from: f,
		mode: mode, timeout: cmp.Or(c.Timeout.Duration, DefaultTimeout), now: o.Now, mailer: o.Mailer}
	if e.now == nil {
		e.now = time.Now
	}
	// InsecureSkipVerify is the operator's opt-in.
	e.tls = &tls.Config{ServerName: c.Host, MinVersion: tls.VersionTLS12, RootCAs: o.RootCAs, InsecureSkipVerify: c.InsecureSkipVerify}
	if c.Username != "" {
		pw, err := c.Password.Value()
		if err != nil {
			return nil, fmt.Errorf("password: %w", err)
		}
		e.username, e.password = c.Username, pw
	}
	if e.username != "" && e.mode == TLSNone {
		return nil, fmt.Errorf("email %s: refusing to send credentials without TLS", name)
	}
	return e, nil
}

// Send mails n to the comma-separated addresses in d.Recipient. A 5xx
// reply is permanent.
func (e *Sender) Send(ctx context.Context, n notify.Notification, d notify.Destination) (notify.Receipt, error) {
	var to []*mail.Address
	for _, r := range strings.Split(d.Recipient, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		a, err := mail.ParseAddress(r)
		if err != nil {
			return notify.Receipt{}, notify.Permanent(fmt.Errorf("email %s: recipient %q: %w", e.name, r, err))
		}
		to = append(to, a)
	}
	if len(to) == 0 {
		return notify.Receipt{}, notify.Permanent(fmt.Errorf("email %s: no recipient", e.name))
	}
	subject := ""
	if n.Email != nil {
		subject = n.Email.Subject
	}
	msgID, msg := e.compose(notify.DeliveryIDFrom(ctx), to, subject, n.Message)
	if err := e.deliver(ctx, to, msg); err != nil {
		var te *textproto.Error
		if errors.As(err, &te) && te.Code >= 500 {
			return notify.Receipt{}, notify.Permanent(fmt.Errorf("email %s: %w", e.name, err))
		}
		return notify.Receipt{}, fmt.Errorf("email %s: %w", e.name, err)
	}
	return notify.Receipt{ID: msgID}, nil
}

// deliveryIDRE is the shape of the outbox's delivery IDs (hex): only such
// an ID goes into a Message-ID as it is.
var deliveryIDRE = regexp.MustCompile(`^[0-9a-f]{8,64}$`)

// compose builds the message. Its Message-ID is the delivery's ID when
// there is one (the same on every attempt, so a repeat can be recognised),
// else random.
func (e *Sender) compose(delivery string, to []*mail.Address, subject, body string) (string, []byte) {
	local := delivery
	if !deliveryIDRE.MatchString(local) {
		var id [12]byte
		_, _ = rand.Read(id[:])
		local = hex.EncodeToString(id[:])
	}
	domain := "crowsnest.local"
	if at := strings.LastIndexByte(e.from.Address, '@'); at >= 0 {
		domain = e.from.Address[at+1:]
	}
	msgID := "<" + local + "@" + domain + ">"
	rcpt := make([]string, len(to))
	for i, a := range to {
		rcpt[i] = a.String()
	}
	ctype := "text/plain"
	if strings.HasPrefix(strings.TrimSpace(body), "<") {
		ctype = "text/html"
	}
	var b bytes.Buffer
	header := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	header("From", e.from.String())
	header("To", strings.Join(rcpt, ", "))
	header("Subject", mime.QEncoding.Encode("utf-8", subject))
	header("Date", e.now().Format(time.RFC1123Z))
	header("Message-ID", msgID)
	header("MIME-Version", "1.0")
	header("Content-Type", ctype+"; charset=UTF-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	_, _ = qp.Write([]byte(strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n")))
	_ = qp.Close()
	return msgID, b.Bytes()
}

func (e *Sender) deliver(ctx context.Context, to []*mail.Address, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	if e.mailer != nil {
		rcpt := make([]string, len(to))
		for i, a := range to {
			rcpt[i] = a.Address
		}
		return e.mailer.Mail(ctx, svc.Mail{Server: e.addr, TLS: string(e.mode), Username: e.username,
			From: e.from.Address, To: rcpt, Message: msg})
	}
	dialer := &net.Dialer{}
	var conn net.Conn
	var err error
	if e.mode == TLSImplicit {
		conn, err = (&tls.Dialer{NetDialer: dialer, Config: e.tls}).DialContext(ctx, "tcp", e.addr)
	} else {
		conn, err = dialer.DialContext(ctx, "tcp", e.addr)
	}
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", e.addr, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() }) // net/smtp takes no context
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, e.host)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("greeting from %s: %w", e.addr, err)
	}
	defer c.Close()
	if err := c.Hello("crowsnest"); err != nil {
		return fmt.Errorf("EHLO: %w", err)
	}
	if e.mode == TLSStartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return notify.Permanent(fmt.Errorf("server %s does not offer STARTTLS", e.addr))
		}
		if err := c.StartTLS(e.tls); err != nil {
			return fmt.Errorf("STARTTLS: %w", err)
		}
	}
	if e.username != "" {
		ok, mechs := c.Extension("AUTH")
		if !ok {
			return notify.Permanent(fmt.Errorf("server %s does not offer AUTH", e.addr))
		}
		if err := c.Auth(e.auth(strings.Fields(mechs))); err != nil {
			return fmt.Errorf("AUTH: %w", err)
		}
	}
	if err := c.Mail(e.from.Address); err != nil {
		return fmt.Errorf("MAIL FROM: %w", err)
	}
	for _, a := range to {
		if err := c.Rcpt(a.Address); err != nil {
			return fmt.Errorf("RCPT TO %s: %w", a.Address, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("DATA: %w", err)
	}
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("writing message: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("ending message: %w", err)
	}
	// The server accepted the message at the end of DATA; a failed QUIT
	// changes nothing.
	_ = c.Quit()
	return nil
}

func (e *Sender) auth(offered []string) smtp.Auth {
	mech := e.mechanism
	if mech == "" {
		mech = "PLAIN"
		hasPlain := false
		for _, m := range offered {
			hasPlain = hasPlain || strings.EqualFold(m, "PLAIN")
		}
		if !hasPlain {
			for _, m := range offered {
				if strings.EqualFold(m, "LOGIN") {
					mech = "LOGIN"
				}
			}
		}
	}
	if mech == "LOGIN" {
		return &loginAuth{username: e.username, password: e.password}
	}
	return smtp.PlainAuth("", e.username, e.password, e.host)
}

// loginAuth is the LOGIN SASL mechanism (net/smtp has only PLAIN and
// CRAM-MD5); it answers the server's Username:/Password: prompts.
type loginAuth struct{ username, password string }

func (a *loginAuth) Start(server *smtp.ServerInfo) (string, []byte, error) {
	if !server.TLS {
		return "", nil, errors.New("refusing LOGIN over an unencrypted connection")
	}
	return "LOGIN", nil, nil
}

func (a *loginAuth) Next(fromServer []byte, more bool) ([]byte, error) {
	if !more {
		return nil, nil
	}
	switch strings.ToLower(strings.TrimSpace(string(fromServer))) {
	case "username:", "user name", "username":
		return []byte(a.username), nil
	case "password:", "password":
		return []byte(a.password), nil
	}
	return nil, fmt.Errorf("unexpected LOGIN challenge %q", fromServer)
}
