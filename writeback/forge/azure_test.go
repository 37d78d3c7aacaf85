package forge_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

// Azure DevOps' Git REST API 7.1, as published
// (https://learn.microsoft.com/en-us/rest/api/azure/devops/git/?view=azure-devops-rest-7.1):
// pull-requests/get-pull-requests (searchCriteria), pull-requests/create,
// pull-requests/get-pull-request, pull-requests/update (title,
// description, status, autoCompleteSetBy) and
// pull-request-threads/create; the bodies follow their documented
// examples.
const (
	azPulls    = "/fabrikam/Fabrikam Fiber/_apis/git/repositories/deploy/pullrequests"
	azHead     = "crowsnest/web-main"
	azHeadSHA  = "b60280bc6e62e2f880f1b63c1e24987664d3bda3"
	azMergeSHA = "fd8da3e51efe350811d2157b2223df53d4db46c3"
	azBot      = "d6245f20-2af8-44f4-9451-8107cb2767db"
	azReviewer = "3b5f0c34-4aec-4bf4-8708-1d36f0dbc468"
)

// azPull is a pull request as the API answers it (the fields crowsnest
// reads, and some it does not).
func azPull(id int, status, head, title, description, extra string) string {
	return fmt.Sprintf(`{"repository":{"id":"3411ebc1-d5aa-464f-9615-0b527bc66719","name":"deploy",
		"project":{"id":"a7573007-bbb3-4341-b726-0c4148a07853","name":"Fabrikam Fiber"}},
		"pullRequestId":%d,"codeReviewId":%d,"status":%q,
		"createdBy":{"id":%q,"displayName":"crowsnest bot","uniqueName":"crowsnest@fabrikam.example"},
		"creationDate":"2026-11-01T16:30:31.6655471Z","title":%q,"description":%q,
		"sourceRefName":"refs/heads/%s","targetRefName":"refs/heads/main","mergeStatus":"succeeded",
		"lastMergeSourceCommit":{"commitId":%q},"lastMergeTargetCommit":{"commitId":"f47bbc106853afe3c1b07a81754bce5f4b8dbf62"},
		"isDraft":false,"url":"https://dev.azure.com/fabrikam/_apis/git/repositories/3411ebc1/pullRequests/%d"%s}`,
		id, id, status, azBot, title, description, head, azHeadSHA, id, extra)
}

// The Azure DevOps client against a recording server that answers as
// Azure DevOps does: every request it sends, checked against the
// published API, through a pull request's life (none found, opened as a
// draft with a label, a reviewer and auto-complete, found and read whole,
// edited, abandoned with a comment thread) and a completed one read back
// with its merge commit.
func TestAzureDevOpsLifecycle(t *testing.T) {
	const pat = "azure-personal-access-token"
	v71 := url.Values{"api-version": {"7.1"}}
	findQuery := url.Values{"searchCriteria.sourceRefName": {"refs/heads/" + azHead}, "searchCriteria.targetRefName": {"refs/heads/main"},
		"searchCriteria.status": {"active"}, "api-version": {"7.1"}}
	labels := `,"labels":[{"id":"b2c3","name":"image-update","active":true},{"id":"c3d4","name":"old","active":false}]`
	script := []exchange{
		// Find: nothing active yet.
		{method: "GET", path: azPulls, query: findQuery, answer: `{"value":[],"count":0}`},
		// Open: a draft with a label and a reviewer by ID, then
		// auto-complete on behalf of its creator.
		{method: "POST", path: azPulls, query: v71,
			body: `{"sourceRefName":"refs/heads/crowsnest/web-main","targetRefName":"refs/heads/main",
				"title":"Update web to 1.2.3","description":"web: 1.2.2 → 1.2.3","isDraft":true,
				"labels":[{"name":"image-update"}],"reviewers":[{"id":"` + azReviewer + `"}]}`,
			status: 201, answer: azPull(22, "active", azHead, "Update web to 1.2.3", "web: 1.2.2 → 1.2.3", labels)},
		{method: "PATCH", path: azPulls + "/22", query: v71, body: `{"autoCompleteSetBy":{"id":"` + azBot + `"}}`,
			answer: azPull(22, "active", azHead, "Update web to 1.2.3", "web: 1.2.2 → 1.2.3", labels)},
		// Find: a fork's branch of the same name, then ours, its
		// description cut as lists cut it; ours is read whole.
		{method: "GET", path: azPulls, query: findQuery,
			answer: `{"count":2,"value":[` +
				azPull(21, "active", azHead, "Not ours", "", `,"forkSource":{"name":"refs/heads/crowsnest/web-main","repository":{"id":"e5f6"}}`) + `,` +
				azPull(22, "active", azHead, "Update web to 1.2.3", "web: 1.2.2", labels) + `]}`},
		{method: "GET", path: azPulls + "/22", query: v71,
			answer: azPull(22, "active", azHead, "Update web to 1.2.3", "web: 1.2.2 → 1.2.3", labels)},
		// Edit.
		{method: "PATCH", path: azPulls + "/22", query: v71, body: `{"title":"Update web to 1.2.4","description":"web: 1.2.2 → 1.2.4"}`,
			answer: azPull(22, "active", azHead, "Update web to 1.2.4", "web: 1.2.2 → 1.2.4", labels)},
		// Close: a closed thread with the comment, then abandoned.
		{method: "POST", path: "/fabrikam/Fabrikam Fiber/_apis/git/repositories/deploy/pullRequests/22/threads", query: v71,
			body:   `{"comments":[{"parentCommentId":0,"content":"Superseded by a newer update.","commentType":"text"}],"status":"closed"}`,
			answer: `{"id":147,"status":"closed","comments":[{"id":1,"parentCommentId":0,"content":"Superseded by a newer update.","commentType":"text"}]}`},
		{method: "PATCH", path: azPulls + "/22", query: v71, body: `{"status":"abandoned"}`,
			answer: azPull(22, "abandoned", azHead, "Update web to 1.2.4", "web: 1.2.2 → 1.2.4", labels)},
		// Get: abandoned is closed.
		{method: "GET", path: azPulls + "/22", query: v71,
			answer: azPull(22, "abandoned", azHead, "Update web to 1.2.4", "web: 1.2.2 → 1.2.4", labels)},
		// Get: one a person completed.
		{method: "GET", path: azPulls + "/23", query: v71,
			answer: azPull(23, "completed", "crowsnest/api-main", "Update api", "api",
				`,"lastMergeCommit":{"commitId":"`+azMergeSHA+`"},"closedDate":"2026-11-02T10:00:00Z"`)},
	}
	srv := scripted(t, script)
	opened := &forge.PullRequest{Number: 22, URL: srv.URL + "/fabrikam/Fabrikam%20Fiber/_git/deploy/pullrequest/22", Head: azHead, Base: "main",
		HeadSHA: azHeadSHA, State: forge.Open, Title: "Update web to 1.2.3", Body: "web: 1.2.2 → 1.2.3", Labels: []string{"image-update"}}
	edited := *opened
	edited.Title, edited.Body = "Update web to 1.2.4", "web: 1.2.2 → 1.2.4"
	l := lifecycle{
		proposal: forge.Proposal{Head: azHead, Base: "main", Title: "Update web to 1.2.3", Body: "web: 1.2.2 → 1.2.3",
			Labels: []string{"image-update"}, Reviewers: []string{azReviewer}, Assignees: []string{"someone"}, Draft: true, AutoMerge: true},
		opened: opened, edited: &edited, merged: 23, mergeCommit: azMergeSHA,
	}
	l.run(t, forge.NewAzureDevOps(pat, forge.Options{}), forge.Repo{API: srv.URL + "/fabrikam", Owner: "Fabrikam Fiber", Name: "deploy"})
	checkExchanges(t, srv, script, basic("", pat))
}

// A reviewer must be an identity ID: a name fails the proposal before
// anything is opened, saying what Azure DevOps wants.
func TestAzureDevOpsReviewerNames(t *testing.T) {
	srv := scripted(t, nil)
	f := forge.NewAzureDevOps("pat", forge.Options{})
	r := forge.Repo{API: srv.URL + "/fabrikam", Owner: "web", Name: "deploy"}
	pr, err := f.Open(t.Context(), r, forge.Proposal{Head: azHead, Base: "main", Title: "t", Reviewers: []string{"alice@fabrikam.example"}})
	if pr != nil || !forge.IsPermanent(err) || !strings.Contains(err.Error(), "identity IDs") {
		t.Errorf("Open with a reviewer's name = %+v, %v; want a permanent error asking for IDs", pr, err)
	}
	checkExchanges(t, srv, nil, "")
}

// A description longer than Azure DevOps keeps (4,000 UTF-16 code units)
// is cut with an ellipsis rather than refused.
func TestAzureDevOpsLongDescription(t *testing.T) {
	long := strings.Repeat("é", 3990) + strings.Repeat("😀", 20) // 3990 + 40 code units
	var sent string
	srv := scripted(t, []exchange{{answer: azPull(24, "active", azHead, "t", "", "")}})
	f := forge.NewAzureDevOps("pat", forge.Options{})
	if _, err := f.Open(t.Context(), forge.Repo{API: srv.URL + "/fabrikam", Owner: "web", Name: "deploy"},
		forge.Proposal{Head: azHead, Base: "main", Title: "t", Body: long}); err != nil {
		t.Fatal(err)
	}
	if reqs := srv.Requests(); len(reqs) == 1 {
		sent = reqs[0].Body
	}
	var in struct {
		Description string `json:"description"`
	}
	if err := json.Unmarshal([]byte(sent), &in); err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("é", 3990) + strings.Repeat("😀", 4) + "…"
	if in.Description != want || len(utf16.Encode([]rune(in.Description))) > 4000 {
		t.Errorf("description = %d code units ending %q, want %q's 3,999 and an ellipsis",
			len(utf16.Encode([]rune(in.Description))), in.Description[len(in.Description)-12:], want[len(want)-12:])
	}
}

func TestAzureDevOpsRepo(t *testing.T) {
	services := forge.Repo{API: "https://dev.azure.com/fabrikam", Owner: "Fabrikam Fiber", Name: "deploy"}
	checkRepoURLs(t, forge.AzureDevOpsRepo, []repoURL{
		{name: "https", url: "https://dev.azure.com/fabrikam/Fabrikam%20Fiber/_git/deploy", want: services},
		{name: "https with the organization as user", url: "https://fabrikam@dev.azure.com/fabrikam/Fabrikam%20Fiber/_git/deploy", want: services},
		{name: "repository named as its project", url: "https://dev.azure.com/fabrikam/_git/deploy",
			want: forge.Repo{API: "https://dev.azure.com/fabrikam", Owner: "deploy", Name: "deploy"}},
		{name: "visualstudio.com", url: "https://fabrikam.visualstudio.com/Fabrikam%20Fiber/_git/deploy",
			want: forge.Repo{API: "https://fabrikam.visualstudio.com", Owner: "Fabrikam Fiber", Name: "deploy"}},
		{name: "visualstudio.com with DefaultCollection", url: "https://fabrikam.visualstudio.com/DefaultCollection/Fabrikam%20Fiber/_git/deploy",
			want: forge.Repo{API: "https://fabrikam.visualstudio.com/DefaultCollection", Owner: "Fabrikam Fiber", Name: "deploy"}},
		{name: "ssh", url: "git@ssh.dev.azure.com:v3/fabrikam/Fabrikam%20Fiber/deploy", want: services},
		{name: "visualstudio.com ssh", url: "fabrikam@vs-ssh.visualstudio.com:v3/fabrikam/Fabrikam%20Fiber/deploy",
			want: forge.Repo{API: "https://fabrikam.visualstudio.com", Owner: "Fabrikam Fiber", Name: "deploy"}},
		{name: "server", url: "https://tfs.example.com/tfs/DefaultCollection/Web/_git/deploy",
			want: forge.Repo{API: "https://tfs.example.com/tfs/DefaultCollection", Owner: "Web", Name: "deploy"}},
		{name: "no _git", url: "https://dev.azure.com/fabrikam/Fabrikam%20Fiber/deploy", wantErr: true},
		{name: "ssh without v3", url: "git@ssh.dev.azure.com:fabrikam/Fabrikam%20Fiber/deploy", wantErr: true},
		{name: "an organization that is no host name", url: "x@vs-ssh.visualstudio.com:v3/evil.example?/web/deploy", wantErr: true},
		{name: "another host's ssh", url: "git@github.com:v3/fabrikam/web/deploy", wantErr: true},
		{name: "a walk out of the path", url: "https://tfs.example.com/tfs/../Web/_git/deploy", wantErr: true},
		{name: "not a URL", url: "deploy", wantErr: true},
	})
}
