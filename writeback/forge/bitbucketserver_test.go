package forge_test

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

// Bitbucket Data Center's REST API, as published (9.x; drafts from
// 8.18, auto-merge from 8.15):
// https://developer.atlassian.com/server/bitbucket/rest/v906/api-group-pull-requests/
// (get pull requests, create, get, update metadata, add a comment,
// decline, merge), the same operations under every version's
// rest/api/latest.
const (
	dcHead      = "crowsnest/web-main"
	dcHeadSHA   = "babecafebabecafebabecafebabecafebabecafe"
	dcMergeSHA  = "0123456789abcdef0123456789abcdef01234567"
	dcPullsPath = "/rest/api/latest/projects/OPS/repos/deploy/pull-requests"
)

// dcRef is a pull request's fromRef or toRef as the API answers it.
func dcRef(branch, project, slug string) string {
	return fmt.Sprintf(`{"id":"refs/heads/%s","displayId":%q,"latestCommit":%q,
		"repository":{"slug":%q,"id":42,"name":%q,"project":{"key":%q,"id":1,"name":"Operations"},"public":false}}`,
		branch, branch, dcHeadSHA, slug, slug, project)
}

// dcPull is a pull request as the API answers it (the fields crowsnest
// reads, and some it does not).
func dcPull(id, version int, state, title, description, fromRef, toRef, extra string) string {
	return fmt.Sprintf(`{"id":%d,"version":%d,"title":%q,"description":%q,"state":%q,"open":%t,"closed":%t,
		"createdDate":1700000000000,"updatedDate":1700000000000,"fromRef":%s,"toRef":%s,"locked":false,
		"author":{"user":{"name":"crowsnest-bot","slug":"crowsnest-bot"},"role":"AUTHOR","approved":false,"status":"UNAPPROVED"},
		"links":{"self":[{"href":"https://bitbucket.example.com/projects/OPS/repos/deploy/pull-requests/%d"}]}%s}`,
		id, version, title, description, state, state == "OPEN", state != "OPEN", fromRef, toRef, id, extra)
}

// The Bitbucket Data Center client against a recording server that
// answers as Data Center does: every request it sends, checked against
// the published API, through a pull request's life (none found, opened as
// a draft with a reviewer, found, edited at the version read, declined
// with a comment) and a merged one read back with its merge commit.
func TestBitbucketServerLifecycle(t *testing.T) {
	const token = "bbdc-http-access-token"
	ours := dcRef(dcHead, "OPS", "deploy")
	main := dcRef("main", "OPS", "deploy")
	findQuery := url.Values{"state": {"OPEN"}, "at": {"refs/heads/" + dcHead}, "direction": {"OUTGOING"}, "limit": {"50"}, "start": {"0"}}
	reviewers := `,"reviewers":[{"user":{"name":"alice","slug":"alice","displayName":"Alice"},"role":"REVIEWER","approved":false,"status":"UNAPPROVED"}]`
	script := []exchange{
		// Find: nothing open yet.
		{method: "GET", path: dcPullsPath, query: findQuery, answer: `{"size":0,"limit":50,"isLastPage":true,"values":[],"start":0}`},
		// Open: a draft with a reviewer by user name; no labels, no
		// assignees (Bitbucket has neither).
		{method: "POST", path: dcPullsPath,
			body: `{"title":"Update web to 1.2.3","description":"web: 1.2.2 → 1.2.3",
				"fromRef":{"id":"refs/heads/crowsnest/web-main","repository":{"slug":"deploy","project":{"key":"OPS"}}},
				"toRef":{"id":"refs/heads/main","repository":{"slug":"deploy","project":{"key":"OPS"}}},
				"reviewers":[{"user":{"name":"alice"}}],"draft":true}`,
			status: 201, answer: dcPull(11, 0, "OPEN", "Update web to 1.2.3", "web: 1.2.2 → 1.2.3", ours, main, `,"draft":true`+reviewers)},
		// Find: one going out to a fork's upstream, then ours.
		{method: "GET", path: dcPullsPath, query: findQuery,
			answer: `{"size":2,"limit":50,"isLastPage":true,"start":0,"values":[` +
				dcPull(3, 0, "OPEN", "Upstream", "", ours, dcRef("main", "UP", "deploy-upstream"), "") + `,` +
				dcPull(11, 0, "OPEN", "Update web to 1.2.3", "web: 1.2.2 → 1.2.3", ours, main, `,"draft":true`+reviewers) + `]}`},
		// Edit: the version and reviewers read first.
		{method: "GET", path: dcPullsPath + "/11",
			answer: dcPull(11, 2, "OPEN", "Update web to 1.2.3", "web: 1.2.2 → 1.2.3", ours, main, `,"draft":true`+reviewers)},
		{method: "PUT", path: dcPullsPath + "/11",
			body: `{"version":2,"title":"Update web to 1.2.4","description":"web: 1.2.2 → 1.2.4",
				"reviewers":[{"user":{"name":"alice"}}],"draft":true}`,
			answer: dcPull(11, 3, "OPEN", "Update web to 1.2.4", "web: 1.2.2 → 1.2.4", ours, main, `,"draft":true`+reviewers)},
		// Close: a comment, then a decline at the version read after it.
		{method: "POST", path: dcPullsPath + "/11/comments", body: `{"text":"Superseded by a newer update."}`,
			status: 201, answer: `{"id":1,"version":0,"text":"Superseded by a newer update."}`},
		{method: "GET", path: dcPullsPath + "/11",
			answer: dcPull(11, 3, "OPEN", "Update web to 1.2.4", "web: 1.2.2 → 1.2.4", ours, main, reviewers)},
		{method: "POST", path: dcPullsPath + "/11/decline", query: url.Values{"version": {"3"}}, body: `{"version":3}`,
			answer: dcPull(11, 4, "DECLINED", "Update web to 1.2.4", "web: 1.2.2 → 1.2.4", ours, main, "")},
		// Get: declined is closed.
		{method: "GET", path: dcPullsPath + "/11",
			answer: dcPull(11, 4, "DECLINED", "Update web to 1.2.4", "web: 1.2.2 → 1.2.4", ours, main, "")},
		// Get: one a person merged.
		{method: "GET", path: dcPullsPath + "/12",
			answer: dcPull(12, 1, "MERGED", "Update api", "api", dcRef("crowsnest/api-main", "OPS", "deploy"), main,
				`,"properties":{"mergeResult":{"outcome":"CLEAN","current":true},"mergeCommit":{"displayId":"0123456789a","id":"`+dcMergeSHA+`"}}`)},
	}
	srv := scripted(t, script)
	opened := &forge.PullRequest{Number: 11, URL: "https://bitbucket.example.com/projects/OPS/repos/deploy/pull-requests/11", Head: dcHead, Base: "main",
		HeadSHA: dcHeadSHA, State: forge.Open, Title: "Update web to 1.2.3", Body: "web: 1.2.2 → 1.2.3"}
	edited := *opened
	edited.Title, edited.Body = "Update web to 1.2.4", "web: 1.2.2 → 1.2.4"
	l := lifecycle{
		proposal: forge.Proposal{Head: dcHead, Base: "main", Title: "Update web to 1.2.3", Body: "web: 1.2.2 → 1.2.3",
			Labels: []string{"image-update"}, Reviewers: []string{"alice"}, Assignees: []string{"bob"}, Draft: true},
		opened: opened, edited: &edited, merged: 12, mergeCommit: dcMergeSHA,
	}
	l.run(t, forge.NewBitbucketServer("", token, forge.Options{}), forge.Repo{API: srv.URL + "/rest/api/latest", Owner: "OPS", Name: "deploy"})
	checkExchanges(t, srv, script, "Bearer "+token)
}

// Auto-merge is a merge request with autoMerge set, at the version just
// opened; when nothing holds the pull request Bitbucket merges it at
// once, and the client says so.
func TestBitbucketServerAutoMerge(t *testing.T) {
	ours, main := dcRef(dcHead, "OPS", "deploy"), dcRef("main", "OPS", "deploy")
	script := []exchange{
		{method: "POST", path: dcPullsPath,
			body: `{"title":"Update api","description":"",
				"fromRef":{"id":"refs/heads/crowsnest/web-main","repository":{"slug":"deploy","project":{"key":"OPS"}}},
				"toRef":{"id":"refs/heads/main","repository":{"slug":"deploy","project":{"key":"OPS"}}}}`,
			status: 201, answer: dcPull(13, 0, "OPEN", "Update api", "", ours, main, "")},
		{method: "POST", path: dcPullsPath + "/13/merge", query: url.Values{"version": {"0"}}, body: `{"autoMerge":true,"version":0}`,
			answer: dcPull(13, 1, "MERGED", "Update api", "", ours, main, `,"properties":{"mergeCommit":{"id":"`+dcMergeSHA+`"}}`)},
	}
	srv := scripted(t, script)
	f := forge.NewBitbucketServer("crowsnest-bot", "http-access-token", forge.Options{})
	r := forge.Repo{API: srv.URL + "/rest/api/latest", Owner: "OPS", Name: "deploy"}
	pr, err := f.Open(t.Context(), r, forge.Proposal{Head: dcHead, Base: "main", Title: "Update api", AutoMerge: true})
	if err != nil || pr.State != forge.Merged || pr.MergeCommit != dcMergeSHA {
		t.Errorf("Open with auto-merge = %+v, %v; want merged at %s", pr, err, dcMergeSHA)
	}
	checkExchanges(t, srv, script, basic("crowsnest-bot", "http-access-token"))
}

func TestBitbucketServerRepo(t *testing.T) {
	checkRepoURLs(t, forge.BitbucketServerRepo, []repoURL{
		{name: "https clone", url: "https://bitbucket.example.com/scm/ops/deploy.git",
			want: forge.Repo{API: "https://bitbucket.example.com/rest/api/latest", Owner: "OPS", Name: "deploy"}},
		{name: "https with a context path, a port and a user", url: "https://ci@git.example.com:8443/bitbucket/scm/OPS/deploy.git",
			want: forge.Repo{API: "https://git.example.com:8443/bitbucket/rest/api/latest", Owner: "OPS", Name: "deploy"}},
		{name: "http", url: "http://bitbucket.internal:7990/scm/ops/deploy.git",
			want: forge.Repo{API: "http://bitbucket.internal:7990/rest/api/latest", Owner: "OPS", Name: "deploy"}},
		{name: "personal repository", url: "https://bitbucket.example.com/scm/~alice/dotfiles.git",
			want: forge.Repo{API: "https://bitbucket.example.com/rest/api/latest", Owner: "~alice", Name: "dotfiles"}},
		{name: "ssh on 7999", url: "ssh://git@bitbucket.example.com:7999/ops/deploy.git",
			want: forge.Repo{API: "https://bitbucket.example.com/rest/api/latest", Owner: "OPS", Name: "deploy"}},
		{name: "ssh, personal", url: "ssh://git@bitbucket.example.com:7999/~alice/dotfiles.git",
			want: forge.Repo{API: "https://bitbucket.example.com/rest/api/latest", Owner: "~alice", Name: "dotfiles"}},
		{name: "browse page", url: "https://bitbucket.example.com/projects/OPS/repos/deploy/browse",
			want: forge.Repo{API: "https://bitbucket.example.com/rest/api/latest", Owner: "OPS", Name: "deploy"}},
		{name: "personal browse page", url: "https://bitbucket.example.com/users/alice/repos/dotfiles",
			want: forge.Repo{API: "https://bitbucket.example.com/rest/api/latest", Owner: "~alice", Name: "dotfiles"}},
		{name: "not a Bitbucket path", url: "https://git.example.com/ops/deploy.git", wantErr: true},
		{name: "ssh with a deeper path", url: "ssh://git@bitbucket.example.com:7999/a/ops/deploy.git", wantErr: true},
		{name: "no repository", url: "https://bitbucket.example.com/scm/ops", wantErr: true},
		{name: "a walk out of the path", url: "https://bitbucket.example.com/../scm/ops/deploy.git", wantErr: true},
		{name: "not a URL", url: "deploy", wantErr: true},
	})
}
