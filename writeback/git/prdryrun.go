package git

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
)

// PlannedRequest is one request a pull-request write would send its
// forge, as a dry run shows it: credential headers "<redacted>".
type PlannedRequest struct {
	Method, URL string
	Header      http.Header
	Body        string
}

// dryRunPull is what a dry run's forge answers a pull-request request
// with: a pull request or merge request as each forge names its fields,
// so that the forge client goes on to its next step (labels, reviewers,
// auto-merge).
const dryRunPull = `{"number":1,"iid":1,"id":1,"pullRequestId":1,"node_id":"dry-run","state":"open","title":"","body":"",` +
	`"html_url":"https://forge.invalid/dry-run/1","web_url":"https://forge.invalid/dry-run/1","url":"https://forge.invalid/dry-run/1",` +
	`"head":{"ref":"","sha":""},"base":{"ref":"","sha":""},"links":{"html":{"href":"https://forge.invalid/dry-run/1"}},` +
	`"data":{"enablePullRequestAutoMerge":{"clientMutationId":null}}}`

// credentialHeaders are shown as <redacted> in planned requests.
var credentialHeaders = []string{"Authorization", "Private-Token", "Job-Token", "Cookie", "Proxy-Authorization"}

// recordingForge is a transport that records each request and answers it
// without sending it anywhere: a list ("[]") for GETs and labels, else
// dryRunPull.
type recordingForge struct {
	mu   sync.Mutex
	reqs []PlannedRequest
}

func (r *recordingForge) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		_ = req.Body.Close()
	}
	h := req.Header.Clone()
	for _, k := range credentialHeaders {
		if h.Get(k) != "" {
			h.Set(k, "<redacted>")
		}
	}
	u := *req.URL
	u.User = nil
	r.mu.Lock()
	r.reqs = append(r.reqs, PlannedRequest{Method: req.Method, URL: u.String(), Header: h, Body: string(body)})
	r.mu.Unlock()
	answer := dryRunPull
	if req.Method == http.MethodGet || strings.HasSuffix(req.URL.Path, "/labels") {
		answer = "[]"
	}
	status := http.StatusOK
	if req.Method == http.MethodPost {
		status = http.StatusCreated
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewBufferString(answer)), Request: req}, nil
}

// plannedRequests are the requests opening (or updating) pp would send,
// recorded by the forge's own client against recordingForge; what the
// client could not do with the recorder's answers is in the error.
func (s *session) plannedRequests(ctx context.Context, pp *PlannedPullRequest) ([]PlannedRequest, error) {
	rec := &recordingForge{}
	f, r, err := s.w.Forges.Forge(ForgeRequest{RepoURL: s.b.repoURL, Kind: s.b.pr.Forge, Creds: s.creds, Transport: rec})
	if err != nil {
		return nil, err
	}
	if pp.Action == "update" {
		_, err = f.Edit(ctx, r, pp.Number, pp.Title, pp.Body)
	} else {
		_, err = f.Open(ctx, r, s.proposal(pp.Title, pp.Body))
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.reqs, err
}
