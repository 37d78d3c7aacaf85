package forge_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

// forges are the Forges under test, each with the header its token is
// sent in.
var forges = []struct {
	name         string
	new          func(token string) forge.Forge
	header, auth string // the credential's header, and its value before the token
}{
	{"gitea", func(tok string) forge.Forge { return forge.NewGitea(tok, forge.Options{}) }, "Authorization", "token "},
	{"github", func(tok string) forge.Forge { return forge.NewGitHub(tok, forge.Options{}) }, "Authorization", "Bearer "},
	{"gitlab", func(tok string) forge.Forge { return forge.NewGitLab(tok, forge.Options{}) }, "PRIVATE-TOKEN", ""},
}

// A forge's refusals are told apart the way the write path needs: a rate
// limit is waited out for the time the forge asks (Retry-After, or
// GitHub's secondary limit as a 403), a refusal retrying cannot change is
// permanent, a server error is tried again; no error shows the token,
// even when the answer quotes it.
func TestForgeErrors(t *testing.T) {
	const token = "forge-token-secret-value"
	tests := []struct {
		name          string
		answer        testnotify.Answer
		wantPermanent bool
		wantWait      time.Duration
	}{
		{name: "429 with Retry-After", answer: testnotify.Answer{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "17"}}, wantWait: 17 * time.Second},
		{name: "429 without a wait", answer: testnotify.Answer{Status: http.StatusTooManyRequests}, wantWait: time.Minute},
		{name: "403 secondary rate limit", answer: testnotify.Answer{Status: http.StatusForbidden, Body: `{"message":"You have exceeded a secondary rate limit"}`, Header: map[string]string{"Retry-After": "30"}}, wantWait: 30 * time.Second},
		{name: "403 secondary rate limit without a wait", answer: testnotify.Answer{Status: http.StatusForbidden, Body: `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`}, wantWait: time.Minute},
		{name: "403 rate limit spent", answer: testnotify.Answer{Status: http.StatusForbidden, Header: map[string]string{"X-RateLimit-Remaining": "0", "Retry-After": "5"}}, wantWait: 5 * time.Second},
		{name: "403 no permission", answer: testnotify.Answer{Status: http.StatusForbidden, Body: `{"message":"token does not have at least one of required scope(s)"}`}, wantPermanent: true},
		{name: "401 quoting the token", answer: testnotify.Answer{Status: http.StatusUnauthorized, Body: `{"message":"invalid token ` + token + `"}`}, wantPermanent: true},
		{name: "422", answer: testnotify.Answer{Status: http.StatusUnprocessableEntity, Body: `{"message":"pull request already exists"}`}, wantPermanent: true},
		{name: "408", answer: testnotify.Answer{Status: http.StatusRequestTimeout}},
		{name: "500", answer: testnotify.Answer{Status: http.StatusInternalServerError, Body: `{"message":"500 Internal Server Error"}`}},
		{name: "502", answer: testnotify.Answer{Status: http.StatusBadGateway, Body: "bad gateway"}},
	}
	for _, fg := range forges {
		for _, tt := range tests {
			t.Run(fg.name+"/"+tt.name, func(t *testing.T) {
				srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: func(testnotify.Request) testnotify.Answer { return tt.answer }})
				_, err := fg.new(token).Open(t.Context(), forge.Repo{API: srv.URL + "/api", Owner: "team", Name: "deploy"}, forge.Proposal{Head: "h", Base: "main", Title: "t"})
				if err == nil {
					t.Fatal("want an error")
				}
				if got := forge.IsPermanent(err); got != tt.wantPermanent {
					t.Errorf("permanent = %v, want %v (%v)", got, tt.wantPermanent, err)
				}
				var rl *forge.RateLimitError
				if got := errors.As(err, &rl); got != (tt.wantWait > 0) || (got && rl.RetryAfter != tt.wantWait) {
					t.Errorf("rate limit = %v %+v, want wait %s (%v)", got, rl, tt.wantWait, err)
				}
				if strings.Contains(err.Error(), token) {
					t.Errorf("error shows the token: %v", err)
				}
				reqs := srv.Requests()
				if len(reqs) != 1 || reqs[0].Header.Get(fg.header) != fg.auth+token {
					t.Errorf("requests = %+v, want one with the token in %s", reqs, fg.header)
				}
			})
		}
	}
}
