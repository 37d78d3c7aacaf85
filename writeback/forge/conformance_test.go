package forge_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
)

// The conformance tests send each operation twice, through crowsnest's
// client and through the forge's official Go client, each to its own
// Recorder answering alike, and compare what a forge reads of the
// requests: method, path (escapes kept), query (as values), JSON body (as
// values, not bytes) and the headers that carry the credential, the media
// type and the API version. The User-Agent differs on purpose (crowsnest
// names itself); the official clients' retries and rate-limit waits are
// theirs and not compared.

// wireCall is one request as the conformance tests compare it.
type wireCall struct {
	Method, Path string
	Query        url.Values
	Body         any
	Header       map[string]string
}

// wireCalls reads reqs as wireCalls: each path under root (the API root's
// path), and headers, by name, "" when absent.
func wireCalls(t *testing.T, reqs []testnotify.Request, root string, headers ...string) []wireCall {
	t.Helper()
	out := make([]wireCall, 0, len(reqs))
	for _, r := range reqs {
		c := wireCall{Method: r.Method, Path: strings.TrimPrefix(r.EscapedPath, root), Header: map[string]string{}}
		q, err := url.ParseQuery(r.Query)
		if err != nil {
			t.Fatalf("%s %s: query %q: %v", r.Method, r.EscapedPath, r.Query, err)
		}
		if len(q) > 0 {
			c.Query = q
		}
		if strings.TrimSpace(r.Body) != "" {
			if err := json.Unmarshal([]byte(r.Body), &c.Body); err != nil {
				t.Fatalf("%s %s: body is not JSON: %v\n%s", r.Method, r.EscapedPath, err, r.Body)
			}
		}
		for _, h := range headers {
			c.Header[h] = r.Header.Get(h)
		}
		out = append(out, c)
	}
	return out
}

// recordBoth runs ours and theirs, each against a Recorder of its own
// that answers with answer, and returns what each sent.
func recordBoth(t *testing.T, answer func(testnotify.Request) testnotify.Answer, ours, theirs func(api *testnotify.Recorder) error) (oursSent, theirsSent []testnotify.Request) {
	t.Helper()
	a := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: answer})
	b := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: answer})
	if err := ours(a); err != nil {
		t.Fatalf("crowsnest: %v", err)
	}
	if err := theirs(b); err != nil {
		t.Fatalf("official client: %v", err)
	}
	return a.Requests(), b.Requests()
}

// jsonAnswer is a JSON answer with status.
func jsonAnswer(status int, body string) testnotify.Answer {
	if status == 0 {
		status = http.StatusOK
	}
	return testnotify.Answer{Status: status, Header: map[string]string{"Content-Type": "application/json"}, Body: body}
}

// jsonUnmarshal reads a recorded JSON body into out.
func jsonUnmarshal(body string, out any) error { return json.Unmarshal([]byte(body), out) }
