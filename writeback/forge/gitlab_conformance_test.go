package forge_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	gitlab "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

const (
	glToken   = "glpat-conformanceTokenValue0123"
	glHeadSHA = "5555555555555555555555555555555555555555"
	// glProject is a project in nested groups with a dot in its name:
	// its path is escaped whole, slashes and dots.
	glGroup, glName = "team/platform", "deploy.k8s"
	glPID           = glGroup + "/" + glName
)

// glUsers are the GitLab users the tests know, by username.
var glUsers = map[string]int64{"alice": 11, "bob": 12, "carol": 13}

// glMR is merge request !7 as GitLab answers it.
func glMR(state, title, mergeStatus string) string {
	return fmt.Sprintf(`{"id":90007,"iid":7,"project_id":300,"source_project_id":300,"target_project_id":300,"state":%q,
"web_url":"https://gitlab.example.com/team/platform/deploy.k8s/-/merge_requests/7","source_branch":"crowsnest/web-main","target_branch":"main",
"sha":%q,"merge_commit_sha":null,"squash_commit_sha":null,"title":%q,"description":"web: 1.2.2 → 1.2.3","labels":["image-update"],
"draft":%t,"detailed_merge_status":%q}`, state, glHeadSHA, title, strings.HasPrefix(title, "Draft: "), mergeStatus)
}

// gitlabAPI answers as GitLab's REST API does for merge request !7 of
// glPID, and for the users in glUsers.
func gitlabAPI(r testnotify.Request) testnotify.Answer {
	p := r.EscapedPath
	switch {
	case strings.HasSuffix(p, "/users"):
		q, _ := url.ParseQuery(r.Query)
		name := q.Get("username")
		if id, ok := glUsers[name]; ok {
			return jsonAnswer(0, fmt.Sprintf(`[{"id":%d,"username":%q,"state":"active"}]`, id, name))
		}
		return jsonAnswer(0, `[]`)
	case strings.HasSuffix(p, "/notes"):
		return jsonAnswer(http.StatusCreated, `{"id":501,"body":"closing"}`)
	case strings.HasSuffix(p, "/merge"):
		return jsonAnswer(0, strings.Replace(glMR("opened", "Update web to 1.2.3", "ci_still_running"), `"iid":7,`, `"iid":7,"merge_when_pipeline_succeeds":true,`, 1))
	case r.Method == http.MethodGet && strings.HasSuffix(p, "/merge_requests"):
		return jsonAnswer(0, "["+glMR("opened", "Update web to 1.2.3", "mergeable")+"]")
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/merge_requests"):
		var in struct{ Title string }
		_ = jsonUnmarshal(r.Body, &in)
		return jsonAnswer(http.StatusCreated, glMR("opened", in.Title, "mergeable"))
	}
	return jsonAnswer(0, glMR("opened", "Update web to 1.2.3", "mergeable"))
}

// glClient is GitLab's Go client on the Recorder, with token.
func glClient(t *testing.T, rec *testnotify.Recorder) *gitlab.Client {
	t.Helper()
	c, err := gitlab.NewClient(glToken, gitlab.WithBaseURL(rec.URL+"/api/v4"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var glWireHeaders = []string{"PRIVATE-TOKEN", "Authorization", "Accept", "Content-Type"}

// What crowsnest's GitLab client sends for each operation is what
// GitLab's Go client sends for the same one.
func TestGitLabConformance(t *testing.T) {
	body := "web: 1.2.2 → 1.2.3\n\n<!-- crowsnest:web -->"
	tests := []struct {
		name   string
		ours   func(f *forge.GitLab, r forge.Repo) error
		theirs func(c *gitlab.Client) error
	}{
		{
			name: "find",
			ours: func(f *forge.GitLab, r forge.Repo) error {
				_, err := f.Find(t.Context(), r, "crowsnest/web-main", "main")
				return err
			},
			theirs: func(c *gitlab.Client) error {
				_, _, err := c.MergeRequests.ListProjectMergeRequests(glPID, &gitlab.ListProjectMergeRequestsOptions{ListOptions: gitlab.ListOptions{PerPage: 100},
					State: gitlab.Ptr("opened"), SourceBranch: gitlab.Ptr("crowsnest/web-main"), TargetBranch: gitlab.Ptr("main")}, gitlab.WithContext(t.Context()))
				return err
			},
		},
		{
			name: "get",
			ours: func(f *forge.GitLab, r forge.Repo) error {
				_, err := f.Get(t.Context(), r, 7)
				return err
			},
			theirs: func(c *gitlab.Client) error {
				_, _, err := c.MergeRequests.GetMergeRequest(glPID, 7, nil, gitlab.WithContext(t.Context()))
				return err
			},
		},
		{
			// Reviewers and assignees are user IDs on GitLab: each name
			// is looked up first, as a client of GitLab's Go API would.
			name: "open with labels, reviewers, assignees, as a draft",
			ours: func(f *forge.GitLab, r forge.Repo) error {
				_, err := f.Open(t.Context(), r, forge.Proposal{Head: "crowsnest/web-main", Base: "main", Title: "Update web to 1.2.3", Body: body,
					Labels: []string{"image-update", "web"}, Reviewers: []string{"alice"}, Assignees: []string{"bob", "carol"}, Draft: true})
				return err
			},
			theirs: func(c *gitlab.Client) error {
				for _, name := range []string{"bob", "carol", "alice"} {
					if _, _, err := c.Users.ListUsers(&gitlab.ListUsersOptions{Username: gitlab.Ptr(name)}, gitlab.WithContext(t.Context())); err != nil {
						return err
					}
				}
				_, _, err := c.MergeRequests.CreateMergeRequest(glPID, &gitlab.CreateMergeRequestOptions{Title: gitlab.Ptr("Draft: Update web to 1.2.3"),
					Description: gitlab.Ptr(body), SourceBranch: gitlab.Ptr("crowsnest/web-main"), TargetBranch: gitlab.Ptr("main"),
					Labels: &gitlab.LabelOptions{"image-update", "web"}, AssigneeIDs: &[]int64{12, 13}, ReviewerIDs: &[]int64{11}}, gitlab.WithContext(t.Context()))
				return err
			},
		},
		{
			name: "open with auto-merge",
			ours: func(f *forge.GitLab, r forge.Repo) error {
				_, err := f.Open(t.Context(), r, forge.Proposal{Head: "crowsnest/web-main", Base: "main", Title: "Update web to 1.2.3", Body: body, AutoMerge: true})
				return err
			},
			theirs: func(c *gitlab.Client) error {
				if _, _, err := c.MergeRequests.CreateMergeRequest(glPID, &gitlab.CreateMergeRequestOptions{Title: gitlab.Ptr("Update web to 1.2.3"),
					Description: gitlab.Ptr(body), SourceBranch: gitlab.Ptr("crowsnest/web-main"), TargetBranch: gitlab.Ptr("main")}, gitlab.WithContext(t.Context())); err != nil {
					return err
				}
				// Both names of auto-merge, as crowsnest sends them: a
				// GitLab before 17.11 knows only the deprecated one.
				opts := &gitlab.AcceptMergeRequestOptions{AutoMerge: gitlab.Ptr(true), SHA: gitlab.Ptr(glHeadSHA)}
				opts.MergeWhenPipelineSucceeds = gitlab.Ptr(true) //nolint:staticcheck // deprecated in GitLab 17.11, sent for older ones
				_, _, err := c.MergeRequests.AcceptMergeRequest(glPID, 7, opts, gitlab.WithContext(t.Context()))
				return err
			},
		},
		{
			// The merge request is read first, to keep a draft a draft.
			name: "edit",
			ours: func(f *forge.GitLab, r forge.Repo) error {
				_, err := f.Edit(t.Context(), r, 7, "Update web to 1.2.4", "web: 1.2.2 → 1.2.4")
				return err
			},
			theirs: func(c *gitlab.Client) error {
				if _, _, err := c.MergeRequests.GetMergeRequest(glPID, 7, nil, gitlab.WithContext(t.Context())); err != nil {
					return err
				}
				_, _, err := c.MergeRequests.UpdateMergeRequest(glPID, 7, &gitlab.UpdateMergeRequestOptions{Title: gitlab.Ptr("Update web to 1.2.4"),
					Description: gitlab.Ptr("web: 1.2.2 → 1.2.4")}, gitlab.WithContext(t.Context()))
				return err
			},
		},
		{
			name: "close with a comment",
			ours: func(f *forge.GitLab, r forge.Repo) error {
				return f.Close(t.Context(), r, 7, "Superseded by !8.")
			},
			theirs: func(c *gitlab.Client) error {
				if _, _, err := c.Notes.CreateMergeRequestNote(glPID, 7, &gitlab.CreateMergeRequestNoteOptions{Body: gitlab.Ptr("Superseded by !8.")}, gitlab.WithContext(t.Context())); err != nil {
					return err
				}
				_, _, err := c.MergeRequests.UpdateMergeRequest(glPID, 7, &gitlab.UpdateMergeRequestOptions{StateEvent: gitlab.Ptr("close")}, gitlab.WithContext(t.Context()))
				return err
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ours, theirs := recordBoth(t, gitlabAPI, func(rec *testnotify.Recorder) error {
				return tt.ours(forge.NewGitLab(glToken, forge.Options{}), forge.Repo{API: rec.URL + "/api/v4", Owner: glGroup, Name: glName})
			}, func(rec *testnotify.Recorder) error {
				return tt.theirs(glClient(t, rec))
			})
			if diff := cmp.Diff(wireCalls(t, theirs, "/api/v4", glWireHeaders...), wireCalls(t, ours, "/api/v4", glWireHeaders...)); diff != "" {
				t.Errorf("crowsnest's requests differ from GitLab's Go client's (-client-go +crowsnest):\n%s", diff)
			}
		})
	}
}
