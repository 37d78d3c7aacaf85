package notifyctl

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// dryRunAnswer is what `notify template render` answers every request of
// a service from package services with: a success carrying the fields
// multi-step senders read (an ID for a GitHub deployment's status, a token
// for an app-installation exchange, Rocket.Chat's login, an OAuth access
// token), so the printed requests are those of a send whose every step
// succeeds. What the senders mint from it is a credential like any other:
// it is printed redacted.
const dryRunAnswer = `{"id":1,"ok":true,"success":true,"status":"success",` +
	`"token":"dry-run-token","expires_at":"2099-01-01T00:00:00Z",` +
	`"access_token":"dry-run-token","token_type":"Bearer","expires_in":3600,` +
	`"data":{"authToken":"dry-run-token","userId":"dry-run-user"}}`

// dryRunSTSAnswer answers AWS STS's AssumeRoleWithWebIdentity (XML), for
// an SQS service whose credentials come from a web identity.
const dryRunSTSAnswer = `<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>` +
	`<AccessKeyId>DRYRUNACCESSKEY</AccessKeyId><SecretAccessKey>dry-run-token</SecretAccessKey>` +
	`<SessionToken>dry-run-token</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration>` +
	`</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`

// dryRunAnswerFor is the answer to one recorded request, and its type.
func dryRunAnswerFor(body []byte) (contentType, answer string) {
	if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") == "AssumeRoleWithWebIdentity" {
		return "text/xml", dryRunSTSAnswer
	}
	return "application/json", dryRunAnswer
}

// recordingTransport records requests and answers each with answer
// (JSON, 200 OK), or dryRunAnswerFor's answer when it is empty; nothing
// leaves the process.
type recordingTransport struct {
	answer string
	reqs   []Request
}

// Request is one request a sender made in a dry run, as it may be shown:
// a password in URL, the values of credential headers and of credential
// fields in a form body are "<redacted>". Values of the notifications
// Secret are not replaced yet (Rendered.HideSecrets).
type Request struct {
	Method, URL string
	Header      http.Header
	Body        []byte
	// Verbatim is set when Body is best shown byte for byte: a webhook's,
	// written by its template and covered by its signature.
	Verbatim bool
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		_ = req.Body.Close()
	}
	r.reqs = append(r.reqs, Request{Method: req.Method, URL: req.URL.String(), Header: req.Header.Clone(), Body: body})
	status, contentType, answer := http.StatusOK, "application/json", r.answer
	if answer == "" {
		if req.Method == http.MethodPost {
			status = http.StatusCreated
		}
		contentType, answer = dryRunAnswerFor(body)
	}
	return &http.Response{
		StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {contentType}},
		Body:    io.NopCloser(strings.NewReader(answer)),
		Request: req,
	}, nil
}

// secretHeaders are shown as <redacted>: they carry credentials. So does
// a header whose name has one of secretHeaderWords (a webhook's
// X-Gitlab-Token, X-Webhook-Secret), whatever its value's source.
var (
	secretHeaders = []string{
		"Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key", "Api-Key", "X-Auth-Token",
		"X-User-Id", "X-Amz-Security-Token", "X-Insert-Key", "X-Pushover-Token",
	}
	secretHeaderWords = []string{"token", "secret", "password", "apikey", "api-key"}
)

// isSecretHeader reports whether header k is shown as <redacted>.
func isSecretHeader(k string) bool {
	lower := strings.ToLower(k)
	return slices.ContainsFunc(secretHeaders, func(h string) bool { return strings.EqualFold(h, k) }) ||
		slices.ContainsFunc(secretHeaderWords, func(w string) bool { return strings.Contains(lower, w) })
}

// redactRequests redacts, in place, the credentials of requests a dry run
// recorded: a password in a URL, credential headers and the credential
// fields of a form body.
func redactRequests(reqs []Request) []Request {
	for i := range reqs {
		r := &reqs[i]
		r.URL = redactUserinfo(r.URL)
		for k := range r.Header {
			if isSecretHeader(k) {
				r.Header[k] = []string{"<redacted>"}
			}
		}
		if len(r.Body) > 0 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			r.Body = redactForm(r.Body)
		}
	}
	return reqs
}

// secretReplacer replaces each value of secret (longest first) by its
// `$key` reference, also in the forms URLs and JSON encode it in.
func secretReplacer(secret map[string][]byte) *strings.Replacer {
	type pair struct{ key, val string }
	var pairs []pair
	for k, v := range secret {
		if len(v) < 4 { // too short to tell apart from ordinary text
			continue
		}
		s := string(v)
		pairs = append(pairs, pair{k, s})
		if e := url.PathEscape(s); e != s {
			pairs = append(pairs, pair{k, e})
		}
		if e := url.QueryEscape(s); e != s {
			pairs = append(pairs, pair{k, e})
		}
		if q, _ := json.Marshal(s); string(q[1:len(q)-1]) != s {
			pairs = append(pairs, pair{k, string(q[1 : len(q)-1])})
		}
	}
	sort.Slice(pairs, func(i, j int) bool { return len(pairs[i].val) > len(pairs[j].val) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.val, "$"+p.key)
	}
	return strings.NewReplacer(args...)
}

// redactUserinfo drops a password from a URL.
func redactUserinfo(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "<redacted>")
	}
	return u.String()
}

// secretFormFields are form fields that carry a credential: minted during
// the dry run (a signed JWT assertion is usable for an hour), read from a
// key file, or the configured one (Slack's Web API takes its token in the
// form).
var secretFormFields = []string{"assertion", "client_secret", "refresh_token", "WebIdentityToken", "password", "token"}

// redactForm replaces the values of secretFormFields in a form body.
func redactForm(body []byte) []byte {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return []byte("<form body not shown: unreadable>")
	}
	changed := false
	for _, k := range secretFormFields {
		if form.Has(k) {
			form.Set(k, "<redacted>")
			changed = true
		}
	}
	if !changed {
		return body
	}
	return []byte(form.Encode())
}
