package forge_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-github/v93/github"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

const (
	ghToken   = "ghp_conformanceTokenValue0123456789"
	ghHeadSHA = "1111111111111111111111111111111111111111"
	ghNodeID  = "PR_kwDOABCDEF4AAAAH"
)

// ghPull is pull request #7 as GitHub answers it; merge_commit_sha is
// its test merge while it is open.
func ghPull(state string, merged bool, labels ...string) string {
	ls := make([]string, len(labels))
	for i, l := range labels {
		ls[i] = fmt.Sprintf(`{"id":%d,"name":%q,"color":"ededed"}`, i+1, l)
	}
	mergedAt := "null"
	if merged {
		mergedAt = `"2026-12-01T10:00:00Z"`
	}
	return fmt.Sprintf(`{"number":7,"node_id":%q,"html_url":"https://github.com/team/deploy/pull/7","state":%q,"merged":%t,"merged_at":%s,
"merge_commit_sha":"2222222222222222222222222222222222222222","title":"Update web to 1.2.3","body":"web: 1.2.2 → 1.2.3",
"head":{"ref":"crowsnest/web-main","sha":%q},"base":{"ref":"main","sha":"3333333333333333333333333333333333333333"},"labels":[%s]}`,
		ghNodeID, state, merged, mergedAt, ghHeadSHA, strings.Join(ls, ","))
}

// githubAPI answers as GitHub's REST API does for pull request #7 of
// team/deploy; graphQL answers /graphql (the request's body in).
func githubAPI(graphQL func(body string) testnotify.Answer) func(testnotify.Request) testnotify.Answer {
	return func(r testnotify.Request) testnotify.Answer {
		p := r.Path
		switch {
		case strings.HasSuffix(p, "/access_tokens"):
			return jsonAnswer(http.StatusCreated, `{"token":"ghs_installationToken1","expires_at":"2099-01-01T00:00:00Z","permissions":{"pull_requests":"write"}}`)
		case strings.HasSuffix(p, "/graphql"):
			if graphQL == nil {
				return jsonAnswer(0, `{"data":{}}`)
			}
			return graphQL(r.Body)
		case r.Method == http.MethodGet && strings.HasSuffix(p, "/pulls"):
			return jsonAnswer(0, "["+ghPull("open", false)+"]")
		case strings.HasSuffix(p, "/labels"):
			return jsonAnswer(0, `[{"id":1,"name":"image-update"},{"id":2,"name":"web"}]`)
		case strings.HasSuffix(p, "/comments"):
			return jsonAnswer(http.StatusCreated, `{"id":101,"body":"closing"}`)
		case strings.HasSuffix(p, "/assignees"):
			return jsonAnswer(http.StatusCreated, `{"number":7}`)
		case strings.HasSuffix(p, "/merge"):
			return jsonAnswer(0, `{"sha":"4444444444444444444444444444444444444444","merged":true,"message":"Pull Request successfully merged"}`)
		case r.Method == http.MethodPost && strings.HasSuffix(p, "/pulls"):
			return jsonAnswer(http.StatusCreated, ghPull("open", false))
		}
		return jsonAnswer(0, ghPull("open", false))
	}
}

// ghClient is go-github on the Recorder as on GitHub Enterprise Server
// (/api/v3/), with token.
func ghClient(t *testing.T, rec *testnotify.Recorder, token string) *github.Client {
	t.Helper()
	c, err := github.NewClient(github.WithAuthToken(token), github.WithEnterpriseURLs(rec.URL+"/api/v3/", rec.URL+"/api/uploads/"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var ghWireHeaders = []string{"Authorization", "Accept", "Content-Type", "X-Github-Api-Version"}

// What crowsnest's GitHub client sends for each operation is what
// go-github sends for the same one.
func TestGitHubConformance(t *testing.T) {
	const owner, name = "team", "deploy"
	body := "web: 1.2.2 → 1.2.3\n\n<!-- crowsnest:web -->"
	tests := []struct {
		name   string
		answer func(testnotify.Request) testnotify.Answer
		ours   func(ctx context.Context, f *forge.GitHub, r forge.Repo) error
		theirs func(ctx context.Context, c *github.Client) error
		// onlyREST drops crowsnest's GraphQL requests: go-github has
		// no GraphQL client (TestGitHubAutoMerge checks them).
		onlyREST bool
	}{
		{
			name: "find",
			ours: func(ctx context.Context, f *forge.GitHub, r forge.Repo) error {
				_, err := f.Find(ctx, r, "crowsnest/web-main", "main")
				return err
			},
			theirs: func(ctx context.Context, c *github.Client) error {
				_, _, err := c.PullRequests.List(ctx, owner, name, &github.PullRequestListOptions{State: "open", Head: owner + ":crowsnest/web-main", Base: "main"})
				return err
			},
		},
		{
			name: "get",
			ours: func(ctx context.Context, f *forge.GitHub, r forge.Repo) error {
				_, err := f.Get(ctx, r, 7)
				return err
			},
			theirs: func(ctx context.Context, c *github.Client) error {
				_, _, err := c.PullRequests.Get(ctx, owner, name, 7)
				return err
			},
		},
		{
			name: "open with labels, reviewers, assignees, as a draft",
			ours: func(ctx context.Context, f *forge.GitHub, r forge.Repo) error {
				_, err := f.Open(ctx, r, forge.Proposal{Head: "crowsnest/web-main", Base: "main", Title: "Update web to 1.2.3", Body: body,
					Labels: []string{"image-update", "web"}, Reviewers: []string{"alice"}, Assignees: []string{"bob", "carol"}, Draft: true})
				return err
			},
			theirs: func(ctx context.Context, c *github.Client) error {
				if _, _, err := c.PullRequests.Create(ctx, owner, name, github.CreatePullRequest{Title: new("Update web to 1.2.3"),
					Head: "crowsnest/web-main", Base: "main", Body: new(body), Draft: new(true)}); err != nil {
					return err
				}
				if _, _, err := c.Issues.AddLabelsToIssue(ctx, owner, name, 7, []string{"image-update", "web"}); err != nil {
					return err
				}
				if _, _, err := c.PullRequests.RequestReviewers(ctx, owner, name, 7, github.ReviewersRequest{Reviewers: []string{"alice"}}); err != nil {
					return err
				}
				_, _, err := c.Issues.AddAssignees(ctx, owner, name, 7, []string{"bob", "carol"})
				return err
			},
		},
		{
			name: "open, nothing else asked",
			ours: func(ctx context.Context, f *forge.GitHub, r forge.Repo) error {
				_, err := f.Open(ctx, r, forge.Proposal{Head: "crowsnest/web-main", Base: "main", Title: "Update web to 1.2.3", Body: body})
				return err
			},
			theirs: func(ctx context.Context, c *github.Client) error {
				_, _, err := c.PullRequests.Create(ctx, owner, name, github.CreatePullRequest{Title: new("Update web to 1.2.3"),
					Head: "crowsnest/web-main", Base: "main", Body: new(body)})
				return err
			},
		},
		{
			// GitHub refuses auto-merge for a pull request nothing
			// holds back ("clean status"): crowsnest merges it now.
			name: "open with auto-merge, merged at once",
			answer: githubAPI(func(q string) testnotify.Answer {
				if strings.Contains(q, "enablePullRequestAutoMerge") {
					return jsonAnswer(0, `{"data":{"enablePullRequestAutoMerge":null},"errors":[{"type":"UNPROCESSABLE","message":"Pull request Pull request is in clean status"}]}`)
				}
				return jsonAnswer(0, `{"data":{"repository":{"autoMergeAllowed":true,"mergeCommitAllowed":true,"squashMergeAllowed":true,"rebaseMergeAllowed":true}}}`)
			}),
			ours: func(ctx context.Context, f *forge.GitHub, r forge.Repo) error {
				_, err := f.Open(ctx, r, forge.Proposal{Head: "crowsnest/web-main", Base: "main", Title: "Update web to 1.2.3", Body: body, AutoMerge: true})
				return err
			},
			theirs: func(ctx context.Context, c *github.Client) error {
				if _, _, err := c.PullRequests.Create(ctx, owner, name, github.CreatePullRequest{Title: new("Update web to 1.2.3"),
					Head: "crowsnest/web-main", Base: "main", Body: new(body)}); err != nil {
					return err
				}
				_, _, err := c.PullRequests.Merge(ctx, owner, name, 7, "", &github.PullRequestOptions{MergeMethod: "merge", SHA: ghHeadSHA})
				return err
			},
			onlyREST: true,
		},
		{
			name: "edit",
			ours: func(ctx context.Context, f *forge.GitHub, r forge.Repo) error {
				_, err := f.Edit(ctx, r, 7, "Update web to 1.2.4", "web: 1.2.2 → 1.2.4")
				return err
			},
			theirs: func(ctx context.Context, c *github.Client) error {
				_, _, err := c.PullRequests.Edit(ctx, owner, name, 7, &github.PullRequest{Title: new("Update web to 1.2.4"), Body: new("web: 1.2.2 → 1.2.4")})
				return err
			},
		},
		{
			name: "close with a comment",
			ours: func(ctx context.Context, f *forge.GitHub, r forge.Repo) error {
				return f.Close(ctx, r, 7, "Superseded by #8.")
			},
			theirs: func(ctx context.Context, c *github.Client) error {
				if _, _, err := c.Issues.CreateComment(ctx, owner, name, 7, github.IssueCommentRequest{Body: "Superseded by #8."}); err != nil {
					return err
				}
				_, _, err := c.PullRequests.Edit(ctx, owner, name, 7, &github.PullRequest{State: new("closed")})
				return err
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer := tt.answer
			if answer == nil {
				answer = githubAPI(nil)
			}
			ours, theirs := recordBoth(t, answer, func(rec *testnotify.Recorder) error {
				return tt.ours(t.Context(), forge.NewGitHub(ghToken, forge.Options{}), forge.Repo{API: rec.URL + "/api/v3", Owner: owner, Name: name})
			}, func(rec *testnotify.Recorder) error {
				return tt.theirs(t.Context(), ghClient(t, rec, ghToken))
			})
			got := wireCalls(t, ours, "/api/v3", ghWireHeaders...)
			if tt.onlyREST {
				got = slices.DeleteFunc(got, func(c wireCall) bool { return c.Path == "/api/graphql" })
			}
			if diff := cmp.Diff(wireCalls(t, theirs, "/api/v3", ghWireHeaders...), got); diff != "" {
				t.Errorf("crowsnest's requests differ from go-github's (-go-github +crowsnest):\n%s", diff)
			}
		})
	}
}
