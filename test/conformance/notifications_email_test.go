package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"math/rand/v2"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argoproj/notifications-engine/pkg/services"
	"github.com/argoproj/notifications-engine/pkg/templates"
	"github.com/emersion/go-smtp"
	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/notify"
	cnpipeline "github.com/crowsnest-dev/crowsnest/notify/pipeline"
	"github.com/crowsnest-dev/crowsnest/notify/render"
	cnemail "github.com/crowsnest-dev/crowsnest/notify/services/email"
	cnsvc "github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// mailbox is a plain SMTP server on 127.0.0.1 (go-smtp) keeping each
// message's envelope and data.
type mailbox struct {
	mu   sync.Mutex
	msgs []capturedMail
	port int
}

type capturedMail struct {
	From string
	To   []string
	Data []byte
}

type mailSession struct {
	box *mailbox
	cur capturedMail
}

func (s *mailSession) Mail(from string, _ *smtp.MailOptions) error { s.cur.From = from; return nil }
func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.cur.To = append(s.cur.To, to)
	return nil
}
func (s *mailSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.cur.Data = b
	s.box.mu.Lock()
	s.box.msgs = append(s.box.msgs, s.cur)
	s.box.mu.Unlock()
	s.cur = capturedMail{}
	return nil
}
func (s *mailSession) Reset()        { s.cur = capturedMail{} }
func (s *mailSession) Logout() error { return nil }

func newMailbox(t *testing.T) *mailbox {
	t.Helper()
	box := &mailbox{}
	srv := smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &mailSession{box: box}, nil }))
	srv.Domain = "localhost"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	box.port = l.Addr().(*net.TCPAddr).Port
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return box
}

func (b *mailbox) take() []capturedMail {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.msgs
	b.msgs = nil
	return out
}

// readMail is what a mail client shows of a message: envelope, decoded
// subject, media type and decoded body.
type readMail struct {
	From      string
	To        []string
	Subject   string
	MediaType string
	Body      string
}

func decodeMail(t *testing.T, m capturedMail) readMail {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(m.Data))
	if err != nil {
		t.Fatalf("reading message: %v\n%s", err, m.Data)
	}
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	mt, _, _ := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	var body io.Reader = msg.Body
	switch strings.ToLower(msg.Header.Get("Content-Transfer-Encoding")) {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, body)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return readMail{From: m.From, To: m.To, Subject: subject, MediaType: mt,
		Body: strings.TrimRight(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")}
}

// TestCatalogEmailOnTheWireMatchesNotificationsEngine sends every catalog
// template for generated Applications through notifications-engine's
// email service and crowsnest's, each to its own SMTP server on
// 127.0.0.1, and compares what a mail client reads: envelope, subject,
// media type and body (headers such as Date and Message-ID differ by
// nature and are not compared).
func TestCatalogEmailOnTheWireMatchesNotificationsEngine(t *testing.T) {
	seed := propertySeed(t)
	reportSeed(t, seed)
	r := rand.New(rand.NewPCG(seed, 0xe3a1))
	set, cfg, _ := catalogSides(t, nil)
	tmpls, err := templates.NewService(cfg.Templates)
	if err != nil {
		t.Fatal(err)
	}
	eng, cn := newMailbox(t), newMailbox(t)
	engMail := services.NewEmailService(services.EmailOptions{Host: "127.0.0.1", Port: eng.port, From: "argocd@example.com"})
	cnMail, err := cnemail.New("email", &config.EmailService{Host: "127.0.0.1", Port: cn.port, From: "argocd@example.com", TLS: string(cnemail.TLSNone)}, cnsvc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(cfg.Templates))
	for name := range cfg.Templates {
		names = append(names, name)
	}
	slices.Sort(names)
	ctx := map[string]string{"argocdUrl": "https://argocd.example.com"}
	base := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	compared, skipped := 0, 0
	for i := 0; i < 40; i++ {
		app := genNotifyApp(r, base)
		for _, name := range names {
			vars := engineVars(app, map[string]string{"argocdUrl": ctx["argocdUrl"], "notificationType": "email"})
			vars["serviceType"] = "email"
			en, eerr := tmpls.FormatNotification(vars, name)
			cnN, cerr := render.Once(cnpipeline.ServiceTemplate(name, set.Config.Templates[name], "email", config.ServiceEmail), cnpipeline.TemplateVars(app, nil, ctx, config.ServiceEmail))
			if eerr != nil || cerr != nil || !sameSent(engineSent(en, config.ServiceEmail, "email"), crowsnestSent(cnN, config.ServiceEmail, "email")) {
				skipped++ // differences the render test classifies
				continue
			}
			if err := engMail.Send(*en, services.Destination{Service: "email", Recipient: "ops@example.com"}); err != nil {
				t.Fatalf("notifications-engine: %v", err)
			}
			if _, err := cnMail.Send(context.Background(), cnN, notify.Destination{Service: "email", Recipient: "ops@example.com"}); err != nil {
				t.Fatalf("crowsnest: %v", err)
			}
			want, got := eng.take(), cn.take()
			if len(want) != 1 || len(got) != 1 {
				t.Fatalf("%s: notifications-engine sent %d messages, crowsnest %d", name, len(want), len(got))
			}
			compared++
			if diff := cmp.Diff(decodeMail(t, want[0]), decodeMail(t, got[0])); diff != "" {
				t.Fatalf("%s (-notifications-engine +crowsnest):\n%s", name, diff)
			}
		}
	}
	t.Logf("seed %d: %d messages compared over SMTP, %d renders skipped (render differences)", seed, compared, skipped)
	if compared == 0 {
		t.Fatal("nothing compared")
	}
}
