package forge_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

func glRepo(rec *testnotify.Recorder) forge.Repo {
	return forge.Repo{API: rec.URL + "/api/v4", Owner: glGroup, Name: glName}
}

// requestLines are the requests rec received as "METHOD escaped-path
// body", the API root's path taken off.
func requestLines(rec *testnotify.Recorder) []string {
	var out []string
	for _, r := range rec.Requests() {
		line := r.Method + " " + strings.TrimPrefix(r.EscapedPath, "/api/v4")
		if r.Query != "" {
			line += "?" + r.Query
		}
		if b := strings.TrimSpace(r.Body); b != "" {
			line += " " + b
		}
		out = append(out, line)
	}
	return out
}

const glMRPath = "/projects/team%2Fplatform%2Fdeploy%2Ek8s/merge_requests"

// What crowsnest reads of GitLab's answers: the IID as the number, the
// state (locked, while GitLab merges, is still open), the merge commit
// (a merge commit, else a squash commit, else the head of a fast-forward
// merge), and only the project's own open merge request from head into
// base, not a fork's.
func TestGitLabReadsMergeRequests(t *testing.T) {
	mr := func(state, extra string) string {
		return strings.Replace(glMR(state, "Update web to 1.2.3", "mergeable"), `"draft"`, extra+`"draft"`, 1)
	}
	tests := []struct {
		name, answer string
		wantState    forge.State
		wantMerge    string
	}{
		{name: "opened", answer: mr("opened", ""), wantState: forge.Open},
		{name: "locked while merging", answer: mr("locked", ""), wantState: forge.Open},
		{name: "closed", answer: mr("closed", ""), wantState: forge.Closed},
		{name: "merged with a merge commit", answer: mr("merged", `"merge_commit_sha":"6666666666666666666666666666666666666666",`), wantState: forge.Merged, wantMerge: "6666666666666666666666666666666666666666"},
		{name: "squashed and fast-forwarded", answer: mr("merged", `"squash_commit_sha":"7777777777777777777777777777777777777777",`), wantState: forge.Merged, wantMerge: "7777777777777777777777777777777777777777"},
		{name: "fast-forwarded", answer: mr("merged", ""), wantState: forge.Merged, wantMerge: glHeadSHA},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: func(testnotify.Request) testnotify.Answer { return jsonAnswer(0, tt.answer) }})
			got, err := forge.NewGitLab(glToken, forge.Options{}).Get(t.Context(), glRepo(srv), 7)
			if err != nil {
				t.Fatal(err)
			}
			want := &forge.PullRequest{Number: 7, URL: "https://gitlab.example.com/team/platform/deploy.k8s/-/merge_requests/7", Head: "crowsnest/web-main", Base: "main",
				HeadSHA: glHeadSHA, State: tt.wantState, MergeCommit: tt.wantMerge, Title: "Update web to 1.2.3", Body: "web: 1.2.2 → 1.2.3", Labels: []string{"image-update"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	t.Run("find skips a fork's", func(t *testing.T) {
		fork := strings.Replace(strings.Replace(glMR("opened", "From a fork", "mergeable"), `"source_project_id":300`, `"source_project_id":999`, 1), `"iid":7`, `"iid":6`, 1)
		srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: func(testnotify.Request) testnotify.Answer {
			return jsonAnswer(0, "["+fork+","+glMR("opened", "Update web", "mergeable")+"]")
		}})
		pr, err := forge.NewGitLab(glToken, forge.Options{}).Find(t.Context(), glRepo(srv), "crowsnest/web-main", "main")
		if err != nil || pr == nil || pr.Number != 7 {
			t.Fatalf("Find = %+v, %v; want !7, not the fork's !6", pr, err)
		}
		if got, want := requestLines(srv), []string{"GET " + glMRPath + "?per_page=100&source_branch=crowsnest%2Fweb-main&state=opened&target_branch=main"}; !cmp.Equal(want, got) {
			t.Errorf("requests = %q, want %q", got, want)
		}
	})
}

// Opening: each user name is looked up once; a name GitLab has no user
// for is left out, and the merge request, opened all the same, comes
// back with a permanent error naming it. A draft is a "Draft: " title.
func TestGitLabOpen(t *testing.T) {
	srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: gitlabAPI})
	pr, err := forge.NewGitLab(glToken, forge.Options{}).Open(t.Context(), glRepo(srv), forge.Proposal{Head: "crowsnest/web-main", Base: "main",
		Title: "Update web", Body: "b", Labels: []string{"image-update", "web"}, Assignees: []string{"bob", "nobody"}, Reviewers: []string{"bob", "alice"}, Draft: true})
	if pr == nil || pr.Number != 7 || pr.Title != "Draft: Update web" {
		t.Fatalf("Open = %+v, want !7, a draft", pr)
	}
	if err == nil || !forge.IsPermanent(err) || !strings.Contains(err.Error(), "merge request !7 opened") || !strings.Contains(err.Error(), "no GitLab user nobody") {
		t.Errorf("Open error = %v, want a permanent one naming nobody", err)
	}
	want := []string{
		"GET /users?username=bob",
		"GET /users?username=nobody",
		"GET /users?username=alice",
		`POST ` + glMRPath + ` {"source_branch":"crowsnest/web-main","target_branch":"main","title":"Draft: Update web","description":"b","labels":"image-update,web","assignee_ids":[12],"reviewer_ids":[12,11]}`,
	}
	if diff := cmp.Diff(want, requestLines(srv)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// Auto-merge waits while GitLab still checks a new merge request (it
// refuses a merge then), and asks for the proposed head commit only; a
// refusal leaves the merge request open and says so.
func TestGitLabAutoMerge(t *testing.T) {
	var gets atomic.Int32
	var refuse atomic.Bool
	srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: func(r testnotify.Request) testnotify.Answer {
		switch {
		case r.Method == http.MethodPost:
			return jsonAnswer(http.StatusCreated, glMR("opened", "Update web", "preparing"))
		case r.Method == http.MethodGet && gets.Add(1) < 3:
			return jsonAnswer(0, glMR("opened", "Update web", "checking"))
		case strings.HasSuffix(r.Path, "/merge") && refuse.Load():
			return jsonAnswer(http.StatusMethodNotAllowed, `{"message":"405 Method Not Allowed"}`)
		}
		return gitlabAPI(r)
	}})
	f := forge.NewGitLab(glToken, forge.Options{})
	pr, err := f.Open(t.Context(), glRepo(srv), forge.Proposal{Head: "crowsnest/web-main", Base: "main", Title: "Update web", Body: "b", AutoMerge: true})
	if err != nil || pr.Number != 7 || pr.State != forge.Open {
		t.Fatalf("Open = %+v, %v; want !7, open, set to merge", pr, err)
	}
	want := []string{
		`POST ` + glMRPath + ` {"source_branch":"crowsnest/web-main","target_branch":"main","title":"Update web","description":"b"}`,
		"GET " + glMRPath + "/7", "GET " + glMRPath + "/7", "GET " + glMRPath + "/7",
		`PUT ` + glMRPath + `/7/merge {"auto_merge":true,"merge_when_pipeline_succeeds":true,"sha":"` + glHeadSHA + `"}`,
	}
	if diff := cmp.Diff(want, requestLines(srv)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	refuse.Store(true)
	gets.Store(10)
	pr, err = f.Open(t.Context(), glRepo(srv), forge.Proposal{Head: "crowsnest/web-main", Base: "main", Title: "Update web", AutoMerge: true})
	if pr == nil || pr.Number != 7 || err == nil || !forge.IsPermanent(err) || !strings.Contains(err.Error(), "merge request !7 opened: auto-merge not set") {
		t.Errorf("Open with the merge refused = %+v, %v; want !7 and a permanent error", pr, err)
	}
}

// Editing a draft keeps it a draft; closing adds the comment as a note
// first.
func TestGitLabEditAndClose(t *testing.T) {
	srv := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: func(r testnotify.Request) testnotify.Answer {
		if r.Method == http.MethodGet {
			return jsonAnswer(0, glMR("opened", "Draft: Update web", "draft_status"))
		}
		return gitlabAPI(r)
	}})
	f := forge.NewGitLab(glToken, forge.Options{})
	if _, err := f.Edit(t.Context(), glRepo(srv), 7, "Update web to 1.2.4", "new body"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(t.Context(), glRepo(srv), 7, "Superseded by !8."); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(t.Context(), glRepo(srv), 7, ""); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"GET " + glMRPath + "/7",
		`PUT ` + glMRPath + `/7 {"title":"Draft: Update web to 1.2.4","description":"new body"}`,
		`POST ` + glMRPath + `/7/notes {"body":"Superseded by !8."}`,
		`PUT ` + glMRPath + `/7 {"state_event":"close"}`,
		`PUT ` + glMRPath + `/7 {"state_event":"close"}`,
	}
	if diff := cmp.Diff(want, requestLines(srv)); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}
