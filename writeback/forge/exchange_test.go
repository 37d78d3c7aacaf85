package forge_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

// exchange is one request a forge client must send, written from the
// forge's published API description, and the answer the recording server
// gives it (an answer shaped like the documented response, trimmed to
// what matters).
type exchange struct {
	method, path string
	// query is the query the request must carry, nil for none.
	query url.Values
	// body is the JSON the request must carry, compared as a value;
	// "" for no body.
	body string
	// status (200 when 0), header and answer are the reply.
	status int
	header map[string]string
	answer string
}

// scripted starts a recording server that answers its i-th request with
// script[i], and a 500 to anything past the script.
func scripted(t *testing.T, script []exchange) *testnotify.Recorder {
	t.Helper()
	var n atomic.Int64
	return testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: func(testnotify.Request) testnotify.Answer {
		i := int(n.Add(1)) - 1
		if i >= len(script) {
			return testnotify.Answer{Status: http.StatusInternalServerError, Body: "unexpected request"}
		}
		e := script[i]
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range e.header {
			h[k] = v
		}
		return testnotify.Answer{Status: e.status, Header: h, Body: e.answer}
	}})
}

// checkExchanges compares what the client sent with the script, request
// by request: method, path, query, the credential header, the JSON media
// types and the body.
func checkExchanges(t *testing.T, rec *testnotify.Recorder, script []exchange, authorization string) {
	t.Helper()
	reqs := rec.Requests()
	if len(reqs) != len(script) {
		t.Errorf("%d requests, want %d:", len(reqs), len(script))
		for _, r := range reqs {
			t.Logf("  %s %s?%s %s", r.Method, r.Path, r.Query, r.Body)
		}
	}
	for i := range min(len(reqs), len(script)) {
		got, want := reqs[i], script[i]
		name := fmt.Sprintf("request %d (%s %s)", i+1, want.method, want.path)
		if got.Method != want.method || got.Path != want.path {
			t.Errorf("%s: got %s %s", name, got.Method, got.Path)
		}
		q, err := url.ParseQuery(got.Query)
		if err != nil {
			t.Errorf("%s: query %q: %v", name, got.Query, err)
		}
		if len(q) == 0 {
			q = nil
		}
		if diff := cmp.Diff(want.query, q); diff != "" {
			t.Errorf("%s: query (-want +got):\n%s", name, diff)
		}
		if a := got.Header.Get("Authorization"); a != authorization {
			t.Errorf("%s: Authorization = %q, want %q", name, a, authorization)
		}
		if a := got.Header.Get("Accept"); a != "application/json" {
			t.Errorf("%s: Accept = %q, want application/json", name, a)
		}
		if want.body == "" {
			if got.Body != "" {
				t.Errorf("%s: body %s, want none", name, got.Body)
			}
			continue
		}
		if ct := got.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type = %q, want application/json", name, ct)
		}
		var gotBody, wantBody any
		if err := json.Unmarshal([]byte(want.body), &wantBody); err != nil {
			t.Fatalf("%s: the script's body: %v", name, err)
		}
		if err := json.Unmarshal([]byte(got.Body), &gotBody); err != nil {
			t.Errorf("%s: body %q is not JSON: %v", name, got.Body, err)
			continue
		}
		if diff := cmp.Diff(wantBody, gotBody); diff != "" {
			t.Errorf("%s: body (-want +got):\n%s", name, diff)
		}
	}
}

// basic is the HTTP Basic credential header of user and password.
func basic(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// Each forge's refusals are told apart the way the write path needs: a
// 429 is waited out for the Retry-After the forge sent, a 5xx is tried
// again, a 401 is permanent; no error shows the credential.
func TestForgeErrorsPerForge(t *testing.T) {
	const secret = "forge-secret-value-1234"
	forges := []struct {
		name  string
		forge forge.Forge
		api   string
		auth  string
	}{
		{"Bitbucket Cloud", forge.NewBitbucketCloud("crowsnest-bot", secret, forge.Options{}), "/2.0", basic("crowsnest-bot", secret)},
		{"Bitbucket Data Center", forge.NewBitbucketServer("crowsnest-bot", secret, forge.Options{}), "/rest/api/latest", basic("crowsnest-bot", secret)},
		{"Azure DevOps", forge.NewAzureDevOps(secret, forge.Options{}), "/fabrikam", basic("", secret)},
	}
	answers := []struct {
		name          string
		answer        testnotify.Answer
		wantPermanent bool
		wantWait      time.Duration
	}{
		{name: "429 with Retry-After", answer: testnotify.Answer{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "17"}}, wantWait: 17 * time.Second},
		{name: "503", answer: testnotify.Answer{Status: http.StatusServiceUnavailable, Body: "service unavailable"}},
		{name: "401", answer: testnotify.Answer{Status: http.StatusUnauthorized, Body: `{"message":"invalid credentials"}`}, wantPermanent: true},
	}
	for _, f := range forges {
		for _, a := range answers {
			t.Run(f.name+"/"+a.name, func(t *testing.T) {
				srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: func(testnotify.Request) testnotify.Answer { return a.answer }})
				r := forge.Repo{API: srv.URL + f.api, Owner: "team", Name: "deploy"}
				_, err := f.forge.Get(t.Context(), r, 7)
				if err == nil {
					t.Fatal("want an error")
				}
				if got := forge.IsPermanent(err); got != a.wantPermanent {
					t.Errorf("permanent = %v, want %v (%v)", got, a.wantPermanent, err)
				}
				var rl *forge.RateLimitError
				if got := errors.As(err, &rl); got != (a.wantWait > 0) || (got && rl.RetryAfter != a.wantWait) {
					t.Errorf("rate limit = %v %+v, want wait %s (%v)", got, rl, a.wantWait, err)
				}
				if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), strings.TrimPrefix(f.auth, "Basic ")) {
					t.Errorf("error shows the credential: %v", err)
				}
				if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Header.Get("Authorization") != f.auth {
					t.Errorf("requests = %+v, want one with %q", reqs, f.auth)
				}
			})
		}
	}
}

// lifecycle is a pull request's life as the write path lives it, for a
// forge's recording server to answer: none open yet, opened as proposal,
// found, edited (title and body to edited's), closed with a comment and
// read back closed; then another one, merged by a person, read back with
// its merge commit.
type lifecycle struct {
	proposal forge.Proposal
	// opened is what Open returns; edited what Edit returns.
	opened, edited *forge.PullRequest
	// merged is the number of the merged one, mergeCommit its merge
	// commit on the base branch.
	merged      int
	mergeCommit string
}

// closingComment is what the lifecycle closes a pull request with.
const closingComment = "Superseded by a newer update."

func (l *lifecycle) run(t *testing.T, f forge.Forge, r forge.Repo) {
	t.Helper()
	ctx := t.Context()
	head, base := l.proposal.Head, l.proposal.Base
	if pr, err := f.Find(ctx, r, head, base); err != nil || pr != nil {
		t.Fatalf("Find before opening = %+v, %v; want none", pr, err)
	}
	opened, err := f.Open(ctx, r, l.proposal)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(l.opened, opened); diff != "" {
		t.Errorf("Open (-want +got):\n%s", diff)
	}
	found, err := f.Find(ctx, r, head, base)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(l.opened, found); diff != "" {
		t.Errorf("Find (-want +got):\n%s", diff)
	}
	edited, err := f.Edit(ctx, r, opened.Number, l.edited.Title, l.edited.Body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(l.edited, edited); diff != "" {
		t.Errorf("Edit (-want +got):\n%s", diff)
	}
	if err := f.Close(ctx, r, opened.Number, closingComment); err != nil {
		t.Fatal(err)
	}
	if closed, err := f.Get(ctx, r, opened.Number); err != nil || closed.State != forge.Closed || closed.MergeCommit != "" {
		t.Errorf("Get after Close = %+v, %v; want closed, not merged", closed, err)
	}
	merged, err := f.Get(ctx, r, l.merged)
	if err != nil || merged.Number != l.merged || merged.State != forge.Merged || merged.MergeCommit != l.mergeCommit || merged.Base != base {
		t.Errorf("Get of a merged one = %+v, %v; want #%d merged into %s at %s", merged, err, l.merged, base, l.mergeCommit)
	}
}

// repoURL is a clone URL and the Repo a forge's mapping makes of it.
type repoURL struct {
	name, url string
	want      forge.Repo
	wantErr   bool
}

// checkRepoURLs runs a forge's mapping of clone URLs to Repos over
// tests.
func checkRepoURLs(t *testing.T, mapping func(string) (forge.Repo, error), tests []repoURL) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mapping(tt.url)
			if (err != nil) != tt.wantErr {
				t.Fatalf("mapping %q: error = %v, want error %v", tt.url, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mapping %q (-want +got):\n%s", tt.url, diff)
			}
		})
	}
}
