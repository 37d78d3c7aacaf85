package notifycmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/crowsnest-dev/crowsnest/internal/notifyctl"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// printServiceRequests prints what the dry run of a configured service
// did (notifyctl.Render): each HTTP request (method, URL, headers in name
// order with credentials already redacted, and body: JSON indented unless
// it is Verbatim, a form one field a line) and each email (SMTP server, TLS, AUTH user,
// envelope and message), in order, separated by "---"; a line starting
// with "#" says what a send assumes or a credential that stood in. Values
// of the notifications Secret are printed as their `$key` reference
// wherever they appear.
func printServiceRequests(w io.Writer, r *notifyctl.Rendered) error {
	var b bytes.Buffer
	for _, s := range r.StandIns {
		fmt.Fprintf(&b, "# %s cannot be read here: the send used a stand-in\n", s)
	}
	if len(r.StandIns) > 0 {
		b.WriteString("\n")
	}
	writeRecording(&b, r.Service, &r.Send)
	if r.Later != nil {
		b.WriteString("\n---\n\n")
		writeRecording(&b, r.Service, r.Later)
	}
	_, err := io.WriteString(w, r.HideSecrets(b.String()))
	return err
}

func writeRecording(b *bytes.Buffer, service string, rec *notifyctl.Recording) {
	if rec.Note != "" {
		fmt.Fprintf(b, "# %s\n\n", rec.Note)
	}
	if len(rec.Requests) == 0 && len(rec.Mails) == 0 {
		fmt.Fprintf(b, "service %s sends nothing for this template and recipient", service)
		if rec.Skipped != "" {
			b.WriteString(": " + rec.Skipped)
		}
		b.WriteString("\n")
		return
	}
	for i, req := range rec.Requests {
		if i > 0 {
			b.WriteString("\n---\n\n")
		}
		writeRequest(b, req)
	}
	for i, m := range rec.Mails {
		if i > 0 || len(rec.Requests) > 0 {
			b.WriteString("\n---\n\n")
		}
		writeMail(b, m)
	}
	if rec.Failed != "" {
		fmt.Fprintf(b, "\n# the send failed after these requests: %s\n", rec.Failed)
	}
}

func writeRequest(b *bytes.Buffer, req notifyctl.Request) {
	fmt.Fprintf(b, "%s %s\n", req.Method, req.URL)
	for _, k := range slices.Sorted(maps.Keys(req.Header)) {
		fmt.Fprintf(b, "%s: %s\n", k, strings.Join(req.Header[k], ", "))
	}
	if len(req.Body) == 0 {
		return
	}
	b.WriteString("\n")
	var pretty bytes.Buffer
	switch {
	case req.Verbatim:
		b.Write(req.Body)
		if !bytes.HasSuffix(req.Body, []byte("\n")) {
			b.WriteString("\n")
		}
	case json.Indent(&pretty, req.Body, "", "  ") == nil:
		b.Write(pretty.Bytes())
		b.WriteString("\n")
	case strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded"):
		writeForm(b, req.Body)
	default:
		b.Write(req.Body)
		b.WriteString("\n")
	}
}

// writeForm writes a form body one field a line, name=value decoded; a
// value with a line break or another control character is quoted.
func writeForm(b *bytes.Buffer, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		b.Write(body)
		b.WriteString("\n")
		return
	}
	for _, k := range slices.Sorted(maps.Keys(form)) {
		for _, v := range form[k] {
			if strings.ContainsFunc(v, unicode.IsControl) {
				v = strconv.Quote(v)
			}
			fmt.Fprintf(b, "%s=%s\n", k, v)
		}
	}
}

// writeMail writes an email as the SMTP session would carry it: server,
// TLS, the AUTH user (the password never reaches here), the envelope, and
// the message after a blank line.
func writeMail(b *bytes.Buffer, m svc.Mail) {
	fmt.Fprintf(b, "SMTP %s\nTLS: %s\n", m.Server, m.TLS)
	if m.Username != "" {
		fmt.Fprintf(b, "AUTH: %s, password <redacted>\n", m.Username)
	}
	fmt.Fprintf(b, "MAIL FROM: <%s>\n", m.From)
	for _, to := range m.To {
		fmt.Fprintf(b, "RCPT TO: <%s>\n", to)
	}
	b.WriteString("\n")
	b.WriteString(strings.ReplaceAll(string(m.Message), "\r\n", "\n"))
	if !bytes.HasSuffix(m.Message, []byte("\n")) {
		b.WriteString("\n")
	}
}
