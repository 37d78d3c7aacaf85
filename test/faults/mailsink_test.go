package faults

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"maps"
	"mime/quotedprintable"
	"net"
	"net/http/httptest"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// The email service the Applications subscribe to and the domain of their
// recipients.
const (
	mailService = "mail"
	mailDomain  = "@example.com"
)

// mailFault is how the SMTP server misbehaves while a fault is on.
type mailFault int

// SMTP faults: refuse for now with 421/451 (throttling, greylisting),
// accept connections and never say a word, or be down (connections
// refused).
const (
	mailOK mailFault = iota
	mailTempFail
	mailHang
	mailDown
)

// Where mailTempFail refuses; the stages take turns.
const (
	atGreeting = iota // 421 instead of the 220 greeting: too many connections
	atRcpt            // 451 to RCPT TO: greylisted
	atData            // 451 after the whole message was read: not queued
)

// mailSink is an SMTP server (go-smtp, STARTTLS with a certificate nothing
// trusts) on a fixed 127.0.0.1 address that counts the messages it
// accepted (250 at the end of DATA) by what they announce, and can be made
// to fail. A message it did not accept is not delivered; an accepted one
// sent again is a duplicate.
type mailSink struct {
	addr string
	cert tls.Certificate

	mu       sync.Mutex
	srv      *smtp.Server
	served   chan struct{} // closed when srv's Serve returned
	fault    mailFault
	injected int
	held     []net.Conn // connections accepted while hanging
	acked    map[string]int
	ids      deliveryIDs
}

var _ destination = (*mailSink)(nil)

// startMailSink serves until the test ends.
func startMailSink(t *testing.T) *mailSink {
	t.Helper()
	s := &mailSink{acked: map[string]int{}, ids: deliveryIDs{}, cert: untrustedCert()}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	s.serve(l)
	t.Cleanup(func() {
		s.mu.Lock()
		srv, served := s.srv, s.served
		s.mu.Unlock()
		_ = srv.Close()
		<-served
		s.release()
	})
	return s
}

// untrustedCert is a certificate for 127.0.0.1 that nothing trusts: the
// one httptest's TLS servers use.
func untrustedCert() tls.Certificate {
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	defer srv.Close()
	return srv.TLS.Certificates[0]
}

// subscription gives each Application a recipient of its own: the outbox
// delivers to a destination one message at a time, so each message meets
// the fault.
func (s *mailSink) subscription(app string) (service, recipient string) {
	return mailService, app + mailDomain
}

func (s *mailSink) config() string {
	host, port, _ := net.SplitHostPort(s.addr)
	return fmt.Sprintf("  services:\n    %s:\n      email: {host: %s, port: %s, tls: starttls, insecureSkipVerify: true, from: crowsnest@example.com, timeout: 2s}\n%s",
		mailService, host, port, announceTemplate)
}

func (s *mailSink) serve(l net.Listener) {
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &mailSession{sink: s}, nil }))
	srv.Domain = "localhost"
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{s.cert}, MinVersion: tls.VersionTLS12}
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0) // dropped connections are the point
	served := make(chan struct{})
	s.mu.Lock()
	s.srv, s.served = srv, served
	s.mu.Unlock()
	go func() { defer close(served); _ = srv.Serve(faultListener{Listener: l, sink: s}) }()
}

// setFault switches the fault; mailDown closes the listener and every
// connection, and leaving it listens again on the same address; leaving
// mailHang closes the connections it held.
func (s *mailSink) setFault(t *testing.T, f mailFault) {
	t.Helper()
	s.mu.Lock()
	prev := s.fault
	s.fault = f
	srv, served := s.srv, s.served
	s.mu.Unlock()
	switch {
	case prev == mailHang && f != mailHang:
		s.release()
	case f == mailDown && prev != mailDown:
		_ = srv.Close()
		<-served
	case prev == mailDown && f != mailDown:
		s.serve(listenAgain(t, s.addr))
	}
}

// release closes the connections held while hanging.
func (s *mailSink) release() {
	s.mu.Lock()
	held := s.held
	s.held = nil
	s.mu.Unlock()
	for _, c := range held {
		_ = c.Close()
	}
}

// refuse reports whether the reply at stage is a temporary failure, and
// counts it. The stages take turns, except that the end of DATA always
// refuses while the fault is on, so that no message is accepted then.
func (s *mailSink) refuse(stage int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fault != mailTempFail || (stage != atData && s.injected%3 != stage) {
		return false
	}
	s.injected++
	return true
}

// faultListener is where the faults that come before any SMTP happen: a
// hanging server holds the connection without a greeting, a throttling
// one greets with 421 and hangs up.
type faultListener struct {
	net.Listener
	sink *mailSink
}

func (l faultListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		s := l.sink
		s.mu.Lock()
		hang := s.fault == mailHang
		if hang {
			s.injected++
			s.held = append(s.held, c)
		}
		s.mu.Unlock()
		switch {
		case hang:
		case s.refuse(atGreeting):
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = io.WriteString(c, "421 4.7.0 Too many connections, try again later\r\n")
			_ = c.Close()
		default:
			return c, nil
		}
	}
}

// mailSession is one SMTP transaction; it needs no AUTH.
type mailSession struct{ sink *mailSink }

func (m *mailSession) Mail(string, *smtp.MailOptions) error { return nil }

func (m *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if !strings.HasSuffix(to, mailDomain) {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	if m.sink.refuse(atRcpt) {
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 7, 1}, Message: "Greylisted, try again later"}
	}
	return nil
}

func (m *mailSession) Data(r io.Reader) error {
	data, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return err
	}
	if m.sink.refuse(atData) {
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Local error, try again later"}
	}
	key, err := mailKey(data)
	if err != nil {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 6, 0}, Message: err.Error()}
	}
	m.sink.mu.Lock()
	m.sink.acked[key]++
	m.sink.ids.add(key, messageID(data))
	m.sink.mu.Unlock()
	return nil
}

func (m *mailSession) Reset()        {}
func (m *mailSession) Logout() error { return nil }

// messageID is a mail's Message-ID header ("" without one).
func messageID(data []byte) string {
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return ""
	}
	return msg.Header.Get("Message-ID")
}

// distinctDeliveries returns how many Message-IDs were acknowledged per
// key.
func (s *mailSink) distinctDeliveries() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids.distinct()
}

// mailKey is messageKey of a mail's body.
func mailKey(data []byte) (string, error) {
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("reading message: %w", err)
	}
	body := msg.Body
	if strings.EqualFold(msg.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body = quotedprintable.NewReader(body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return "", fmt.Errorf("reading body: %w", err)
	}
	return messageKey(b), nil
}

// faultsMet returns how many connections or replies met a fault.
func (s *mailSink) faultsMet() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.injected
}

// counts returns a copy of the accepted messages by key.
func (s *mailSink) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.acked)
}
