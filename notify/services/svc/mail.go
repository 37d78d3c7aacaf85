package svc

import "context"

// Mailer takes a composed email in place of the email sender's own SMTP
// session (Options.Mailer): `notify template render` records the message
// with one, and nothing connects. The password stays with the sender; a
// Mail holds none.
type Mailer interface {
	Mail(ctx context.Context, m Mail) error
}

// Mail is one message an email sender hands to a Mailer: the SMTP session
// it would open, its envelope, and the message as DATA carries it.
type Mail struct {
	// Server is the SMTP server's host:port; TLS how the session is
	// protected (starttls, tls or none); Username who it authenticates
	// as, "" for no AUTH.
	Server, TLS, Username string
	// From is the envelope's sender (MAIL FROM), To its recipients (RCPT
	// TO), in order.
	From string
	To   []string
	// Message is the headers, a blank line and the body, with CRLF line
	// ends.
	Message []byte
}
