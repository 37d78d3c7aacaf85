package forge_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

// What crowsnest reads of GitHub's answers: the state (merged from
// merged or merged_at, the merge commit only once merged: before, it is
// GitHub's test merge), and only an open pull request from head into base.
func TestGitHubReadsPullRequests(t *testing.T) {
	base := forge.PullRequest{Number: 7, URL: "https://github.com/team/deploy/pull/7", Head: "crowsnest/web-main", Base: "main", HeadSHA: ghHeadSHA,
		Title: "Update web to 1.2.3", Body: "web: 1.2.2 → 1.2.3"}
	with := func(state forge.State, merge string, labels ...string) *forge.PullRequest {
		pr := base
		pr.State, pr.MergeCommit, pr.Labels = state, merge, labels
		return &pr
	}
	tests := []struct {
		name   string
		answer string
		want   *forge.PullRequest
	}{
		{name: "open", answer: ghPull("open", false, "image-update"), want: with(forge.Open, "", "image-update")},
		{name: "closed", answer: ghPull("closed", false), want: with(forge.Closed, "")},
		{name: "merged", answer: ghPull("closed", true), want: with(forge.Merged, "2222222222222222222222222222222222222222")},
		{name: "merged_at only", answer: strings.Replace(ghPull("closed", true), `"merged":true`, `"merged":false`, 1), want: with(forge.Merged, "2222222222222222222222222222222222222222")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: func(testnotify.Request) testnotify.Answer { return jsonAnswer(0, tt.answer) }})
			got, err := forge.NewGitHub(ghToken, forge.Options{}).Get(t.Context(), forge.Repo{API: srv.URL, Owner: "team", Name: "deploy"}, 7)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	t.Run("find", func(t *testing.T) {
		answers := map[string]string{"none": `[]`, "another base": "[" + strings.Replace(ghPull("open", false), `"ref":"main"`, `"ref":"release"`, 1) + "]",
			"one": "[" + ghPull("open", false) + "]"}
		srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: func(r testnotify.Request) testnotify.Answer {
			return jsonAnswer(0, answers[r.Header.Get("X-Case")])
		}})
		for c, want := range map[string]bool{"none": false, "another base": false, "one": true} {
			g := forge.NewGitHub(ghToken, forge.Options{Transport: caseHeader(c)})
			pr, err := g.Find(t.Context(), forge.Repo{API: srv.URL, Owner: "team", Name: "deploy"}, "crowsnest/web-main", "main")
			if err != nil || (pr != nil) != want {
				t.Errorf("%s: Find = %+v, %v; want found %v", c, pr, err, want)
			}
		}
	})
}

// caseHeader is a transport that names the test case in X-Case.
type caseHeader string

func (c caseHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Case", string(c))
	return http.DefaultTransport.RoundTrip(r)
}

// A pull request GitHub opened is returned even when a later step
// fails; the steps after it are not asked for.
func TestGitHubOpenStepFails(t *testing.T) {
	srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: func(r testnotify.Request) testnotify.Answer {
		if strings.HasSuffix(r.Path, "/requested_reviewers") {
			return jsonAnswer(http.StatusUnprocessableEntity, `{"message":"Reviews may only be requested from collaborators."}`)
		}
		return githubAPI(nil)(r)
	}})
	pr, err := forge.NewGitHub(ghToken, forge.Options{}).Open(t.Context(), forge.Repo{API: srv.URL, Owner: "team", Name: "deploy"},
		forge.Proposal{Head: "crowsnest/web-main", Base: "main", Title: "t", Labels: []string{"image-update", "web"}, Reviewers: []string{"mallory"}, Assignees: []string{"bob"}})
	if pr == nil || pr.Number != 7 || !cmp.Equal(pr.Labels, []string{"image-update", "web"}) {
		t.Errorf("Open = %+v, want #7 with the labels GitHub answered", pr)
	}
	if err == nil || !forge.IsPermanent(err) || !strings.Contains(err.Error(), "pull request #7 opened, reviewers not requested") {
		t.Errorf("Open error = %v, want a permanent one saying #7 is open without reviewers", err)
	}
	var paths []string
	for _, r := range srv.Requests() {
		paths = append(paths, r.Method+" "+r.Path)
	}
	want := []string{"POST /repos/team/deploy/pulls", "POST /repos/team/deploy/issues/7/labels", "POST /repos/team/deploy/pulls/7/requested_reviewers"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// Auto-merge goes through GitHub's GraphQL API (beside /api/v3 on
// Enterprise Server, /graphql on api.github.com): the repository's merge
// methods are read, the first allowed of merge, squash and rebase is
// asked for with the proposed head commit; a pull request nothing holds
// back is merged at once over REST.
func TestGitHubAutoMerge(t *testing.T) {
	const allAllowed = `{"data":{"repository":{"autoMergeAllowed":true,"mergeCommitAllowed":true,"squashMergeAllowed":true,"rebaseMergeAllowed":true}}}`
	enabled := `{"data":{"enablePullRequestAutoMerge":{"clientMutationId":null}}}`
	tests := []struct {
		name          string
		api           string // under the server
		methods       string
		mutation      string
		wantMethod    string // "" when no mutation is sent
		wantMerged    bool
		wantPermanent bool
		wantWait      time.Duration
		wantErr       string
	}{
		{name: "merge commits allowed, enterprise", api: "/api/v3", methods: allAllowed, mutation: enabled, wantMethod: "MERGE"},
		{name: "squash only, github.com", methods: `{"data":{"repository":{"autoMergeAllowed":true,"squashMergeAllowed":true}}}`, mutation: enabled, wantMethod: "SQUASH"},
		{name: "rebase only", methods: `{"data":{"repository":{"autoMergeAllowed":true,"rebaseMergeAllowed":true}}}`, mutation: enabled, wantMethod: "REBASE"},
		{name: "auto-merge off in the repository", methods: `{"data":{"repository":{"autoMergeAllowed":false,"mergeCommitAllowed":true}}}`,
			wantPermanent: true, wantErr: `does not allow auto-merge`},
		{name: "nothing holds it: merged now", methods: `{"data":{"repository":{"autoMergeAllowed":true,"squashMergeAllowed":true}}}`, wantMethod: "SQUASH", wantMerged: true,
			mutation: `{"data":{"enablePullRequestAutoMerge":null},"errors":[{"type":"UNPROCESSABLE","message":"Pull request Pull request is in clean status"}]}`},
		{name: "refused", methods: allAllowed, wantMethod: "MERGE", wantPermanent: true, wantErr: "GraphQL: Resource not accessible by integration",
			mutation: `{"data":null,"errors":[{"type":"FORBIDDEN","message":"Resource not accessible by integration"}]}`},
		{name: "GraphQL rate limit", methods: `{"errors":[{"type":"RATE_LIMITED","message":"API rate limit exceeded"}]}`, wantWait: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: githubAPI(func(q string) testnotify.Answer {
				if strings.Contains(q, "enablePullRequestAutoMerge") {
					return jsonAnswer(0, tt.mutation)
				}
				return jsonAnswer(0, tt.methods)
			})})
			pr, err := forge.NewGitHub(ghToken, forge.Options{}).Open(t.Context(), forge.Repo{API: srv.URL + tt.api, Owner: "team", Name: "deploy"},
				forge.Proposal{Head: "crowsnest/web-main", Base: "main", Title: "t", AutoMerge: true})
			if pr == nil || pr.Number != 7 {
				t.Fatalf("Open = %+v, %v; want #7", pr, err)
			}
			checkErr(t, err, tt.wantErr, tt.wantPermanent, tt.wantWait)
			if got := pr.State == forge.Merged && pr.MergeCommit == "4444444444444444444444444444444444444444"; got != tt.wantMerged {
				t.Errorf("Open = state %s, merge commit %q; want merged %v", pr.State, pr.MergeCommit, tt.wantMerged)
			}
			checkGraphQL(t, srv.Requests(), strings.TrimSuffix(tt.api, "/v3")+"/graphql", tt.wantMethod, tt.wantMerged)
		})
	}
}

// checkErr checks err against what a case wants: none, or one saying
// wantErr, permanent or a rate limit of wantWait.
func checkErr(t *testing.T, err error, wantErr string, wantPermanent bool, wantWait time.Duration) {
	t.Helper()
	if wantErr == "" && !wantPermanent && wantWait == 0 {
		if err != nil {
			t.Errorf("error = %v, want none", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) || forge.IsPermanent(err) != wantPermanent {
		t.Errorf("error = %v, want one with %q, permanent %v", err, wantErr, wantPermanent)
	}
	var rl *forge.RateLimitError
	if got := errors.As(err, &rl); got != (wantWait > 0) || (got && rl.RetryAfter != wantWait) {
		t.Errorf("error = %v, want a rate limit of %s", err, wantWait)
	}
}

// checkGraphQL checks the GraphQL requests at path after the pull
// request's creation: the merge methods query, then (method not "") the
// mutation with it, then (merged) the REST merge of the head commit.
func checkGraphQL(t *testing.T, reqs []testnotify.Request, path, method string, merged bool) {
	t.Helper()
	var gql []map[string]any
	for _, r := range reqs[1:] {
		if r.Path != path {
			continue
		}
		var in struct {
			Query     string
			Variables map[string]any
		}
		if err := json.Unmarshal([]byte(r.Body), &in); err != nil || in.Query == "" {
			t.Fatalf("GraphQL request %s: %v", r.Body, err)
		}
		if r.Header.Get("Authorization") != "Bearer "+ghToken {
			t.Errorf("GraphQL request without the token: %q", r.Header.Get("Authorization"))
		}
		gql = append(gql, in.Variables)
	}
	want := []map[string]any{{"owner": "team", "name": "deploy"}}
	if method != "" {
		want = append(want, map[string]any{"id": ghNodeID, "method": method, "head": ghHeadSHA})
	}
	if diff := cmp.Diff(want, gql); diff != "" {
		t.Errorf("GraphQL variables at %s (-want +got):\n%s", path, diff)
	}
	last := reqs[len(reqs)-1]
	if gotMerge := strings.HasSuffix(last.Path, "/pulls/7/merge"); gotMerge != merged {
		t.Errorf("last request %s %s, want a merge %v", last.Method, last.Path, merged)
	} else if merged && last.Body != `{"merge_method":"`+strings.ToLower(method)+`","sha":"`+ghHeadSHA+`"}`+"\n" {
		t.Errorf("merge body %s, want the method and the head commit", last.Body)
	}
}
