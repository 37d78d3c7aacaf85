package testnotify

import (
	"cmp"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// selfSigned makes a certificate for 127.0.0.1 and returns it with its
// DER.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smtp test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, der
}

// ReceivedMail is one message an SMTPServer accepted: User is the
// authenticated user and mechanism ("crowsnest/PLAIN").
type ReceivedMail struct {
	User, From string
	To         []string
	Data       []byte
}

// SMTPServer is a go-smtp server on 127.0.0.1 with STARTTLS (or implicit
// TLS), AUTH PLAIN and LOGIN for one user, recording what it receives.
type SMTPServer struct {
	addr string
	// CA trusts the server's certificate.
	CA       *x509.CertPool
	password string
	mu       sync.Mutex
	mail     []ReceivedMail
	denied   int
}

// SMTPOptions configure an SMTPServer.
type SMTPOptions struct {
	// ImplicitTLS speaks TLS from the first byte (port 465's way);
	// without it the server offers STARTTLS.
	ImplicitTLS bool
	// Password is SMTPUser's; SMTPPassword when empty.
	Password string
}

// The one account an SMTPServer accepts (with SMTPOptions.Password when
// set).
const (
	SMTPUser     = "crowsnest"
	SMTPPassword = "smtp-password-secret"
)

// NewSMTPServer starts an SMTPServer with a self-signed certificate for
// 127.0.0.1 (CA trusts it); it refuses mail before AUTH and recipients
// at rejected.example with a 550. It stops when the test ends.
func NewSMTPServer(t *testing.T, o SMTPOptions) *SMTPServer {
	t.Helper()
	cert, der := selfSigned(t)
	s := &SMTPServer{CA: x509.NewCertPool(), password: cmp.Or(o.Password, SMTPPassword)}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	s.CA.AddCert(leaf)
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &smtpSession{srv: s}, nil }))
	srv.Domain = "localhost"
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.ReadTimeout, srv.WriteTimeout = 5*time.Second, 5*time.Second
	var l net.Listener
	if o.ImplicitTLS {
		l, err = tls.Listen("tcp", "127.0.0.1:0", srv.TLSConfig)
	} else {
		l, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return s
}

// Port is the server's port.
func (s *SMTPServer) Port(t *testing.T) int {
	t.Helper()
	_, p, _ := net.SplitHostPort(s.addr)
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Mail returns the messages received so far.
func (s *SMTPServer) Mail() []ReceivedMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ReceivedMail(nil), s.mail...)
}

// Denied is how many logins the server refused.
func (s *SMTPServer) Denied() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.denied
}

type smtpSession struct {
	srv  *SMTPServer
	cur  ReceivedMail
	user string
}

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain, sasl.Login} }

func (s *smtpSession) Auth(mech string) (sasl.Server, error) {
	check := func(user, pass string) error {
		if user != SMTPUser || pass != s.srv.password {
			s.srv.mu.Lock()
			s.srv.denied++
			s.srv.mu.Unlock()
			return smtp.ErrAuthFailed
		}
		s.user = user + "/" + mech
		return nil
	}
	if mech == sasl.Login {
		return &loginServer{check: check}, nil
	}
	return sasl.NewPlainServer(func(_, user, pass string) error { return check(user, pass) }), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.user == "" {
		return smtp.ErrAuthRequired
	}
	s.cur = ReceivedMail{User: s.user, From: from}
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if strings.HasSuffix(to, "@rejected.example") {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	s.cur.To = append(s.cur.To, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.Data = b
	s.srv.mu.Lock()
	s.srv.mail = append(s.srv.mail, s.cur)
	s.srv.mu.Unlock()
	return nil
}

func (s *smtpSession) Reset()        { s.cur = ReceivedMail{} }
func (s *smtpSession) Logout() error { return nil }

// loginServer is the server side of SASL LOGIN, which go-sasl lacks.
type loginServer struct {
	step  int
	user  string
	check func(user, pass string) error
}

func (l *loginServer) Next(resp []byte) ([]byte, bool, error) {
	l.step++
	switch l.step {
	case 1:
		if len(resp) > 0 { // initial response carries the user name
			l.user = string(resp)
			l.step++
			return []byte("Password:"), false, nil
		}
		return []byte("Username:"), false, nil
	case 2:
		l.user = string(resp)
		return []byte("Password:"), false, nil
	default:
		return nil, true, l.check(l.user, string(resp))
	}
}
