package forge_test

import (
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

// Bitbucket Cloud's REST API 2.0, as published:
// https://developer.atlassian.com/cloud/bitbucket/rest/api-group-pullrequests/
// (list, create, get, update, comment, decline), the query language at
// https://developer.atlassian.com/cloud/bitbucket/rest/intro/#filtering,
// partial responses at https://developer.atlassian.com/cloud/bitbucket/rest/intro/#partial-response
// and a commit at https://developer.atlassian.com/cloud/bitbucket/rest/api-group-commits/#api-repositories-workspace-repo-slug-commit-commit-get.
const (
	bbHead       = "crowsnest/web-main"
	bbHeadFull   = "3f8e1a2b4c5d6e7f8091a2b3c4d5e6f708192a3b"
	bbHeadShort  = "3f8e1a2b4c5d" // Bitbucket Cloud abbreviates a pull request's commits
	bbMergeFull  = "9c2d4e6f8a0b1c3d5e7f9a1b3c5d7e9f1a3b5c7d"
	bbMergeShort = "9c2d4e6f8a0b"
	bbReviewer   = "{504c3b62-8120-4f0c-a7bc-87800b9d6f70}"
	bbAccountID  = "557058:c0b1a2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d"
)

// bbCloudPull is a pull request as the API answers it (the fields
// crowsnest reads, and some it does not).
func bbCloudPull(id int, state, head, fromRepo, hash, title, description, extra string) string {
	return fmt.Sprintf(`{"type":"pullrequest","id":%d,"state":%q,"title":%q,"description":%q,
		"summary":{"type":"rendered","raw":%q,"markup":"markdown","html":"<p>…</p>"},
		"source":{"branch":{"name":%q},"commit":{"type":"commit","hash":%q},"repository":{"type":"repository","full_name":%q}},
		"destination":{"branch":{"name":"main"},"commit":{"type":"commit","hash":"0a1b2c3d4e5f"},"repository":{"type":"repository","full_name":"team/deploy"}},
		"links":{"html":{"href":"https://bitbucket.org/team/deploy/pull-requests/%d"}},
		"close_source_branch":false,"comment_count":0%s}`,
		id, state, title, description, description, head, hash, fromRepo, id, extra)
}

func bbCommitLookup(short, full string) exchange {
	return exchange{method: "GET", path: "/2.0/repositories/team/deploy/commit/" + short, query: url.Values{"fields": {"hash"}},
		answer: fmt.Sprintf(`{"hash":%q}`, full)}
}

// The Bitbucket Cloud client against a recording server that answers as
// Bitbucket Cloud does: every request it sends, checked against the
// published API, through a pull request's life (none found, opened as a
// draft with reviewers, found, edited, declined with a comment) and a
// merged one read back with whole commit IDs.
func TestBitbucketCloudLifecycle(t *testing.T) {
	const token = "bb-cloud-access-token"
	findQuery := url.Values{"q": {`source.branch.name="crowsnest/web-main" AND destination.branch.name="main" AND state="OPEN"`},
		"pagelen": {"50"}, "page": {"1"}}
	openedJSON := bbCloudPull(7, "OPEN", bbHead, "team/deploy", bbHeadShort, "Update web to 1.2.3", "web: 1.2.2 → 1.2.3", `,"draft":true`)
	script := []exchange{
		// Find: nothing open yet.
		{method: "GET", path: "/2.0/repositories/team/deploy/pullrequests", query: findQuery, answer: `{"pagelen":50,"size":0,"page":1,"values":[]}`},
		// Open: a draft with reviewers by UUID and by account ID; no
		// labels, no assignees (Bitbucket has neither).
		{method: "POST", path: "/2.0/repositories/team/deploy/pullrequests",
			body: `{"title":"Update web to 1.2.3","description":"web: 1.2.2 → 1.2.3",
				"source":{"branch":{"name":"crowsnest/web-main"}},"destination":{"branch":{"name":"main"}},
				"reviewers":[{"uuid":"` + bbReviewer + `"},{"account_id":"` + bbAccountID + `"}],"draft":true}`,
			status: 201, answer: openedJSON},
		bbCommitLookup(bbHeadShort, bbHeadFull),
		// Find: a fork's branch of the same name first, then ours.
		{method: "GET", path: "/2.0/repositories/team/deploy/pullrequests", query: findQuery,
			answer: `{"pagelen":50,"size":2,"page":1,"values":[` +
				bbCloudPull(6, "OPEN", bbHead, "someone/deploy", "aaaaaaaaaaaa", "Not ours", "", "") + `,` + openedJSON + `]}`},
		bbCommitLookup(bbHeadShort, bbHeadFull),
		// Edit: read the reviewers and the draft flag, send them back.
		{method: "GET", path: "/2.0/repositories/team/deploy/pullrequests/7",
			answer: openedJSON[:len(openedJSON)-1] + `,"reviewers":[{"type":"user","uuid":"` + bbReviewer + `","account_id":"` + bbAccountID + `","display_name":"Ada"}]}`},
		{method: "PUT", path: "/2.0/repositories/team/deploy/pullrequests/7",
			body: `{"title":"Update web to 1.2.4","description":"web: 1.2.2 → 1.2.4",
				"reviewers":[{"uuid":"` + bbReviewer + `","account_id":"` + bbAccountID + `"}],"draft":true}`,
			answer: bbCloudPull(7, "OPEN", bbHead, "team/deploy", bbHeadShort, "Update web to 1.2.4", "web: 1.2.2 → 1.2.4", `,"draft":true`)},
		bbCommitLookup(bbHeadShort, bbHeadFull),
		// Close: a comment, then a decline.
		{method: "POST", path: "/2.0/repositories/team/deploy/pullrequests/7/comments",
			body: `{"content":{"raw":"Superseded by a newer update."}}`, status: 201, answer: `{"type":"pullrequest_comment","id":1}`},
		{method: "POST", path: "/2.0/repositories/team/deploy/pullrequests/7/decline",
			answer: bbCloudPull(7, "DECLINED", bbHead, "team/deploy", bbHeadShort, "Update web to 1.2.4", "web: 1.2.2 → 1.2.4", "")},
		// Get: declined is closed.
		{method: "GET", path: "/2.0/repositories/team/deploy/pullrequests/7",
			answer: bbCloudPull(7, "DECLINED", bbHead, "team/deploy", bbHeadShort, "Update web to 1.2.4", "web: 1.2.2 → 1.2.4", "")},
		bbCommitLookup(bbHeadShort, bbHeadFull),
		// Get: one a person merged.
		{method: "GET", path: "/2.0/repositories/team/deploy/pullrequests/8",
			answer: bbCloudPull(8, "MERGED", "crowsnest/api-main", "team/deploy", bbHeadShort, "Update api", "api",
				`,"merge_commit":{"type":"commit","hash":"`+bbMergeShort+`"}`)},
		bbCommitLookup(bbHeadShort, bbHeadFull),
		bbCommitLookup(bbMergeShort, bbMergeFull),
	}
	srv := scripted(t, script)
	opened := &forge.PullRequest{Number: 7, URL: "https://bitbucket.org/team/deploy/pull-requests/7", Head: bbHead, Base: "main",
		HeadSHA: bbHeadFull, State: forge.Open, Title: "Update web to 1.2.3", Body: "web: 1.2.2 → 1.2.3"}
	edited := *opened
	edited.Title, edited.Body = "Update web to 1.2.4", "web: 1.2.2 → 1.2.4"
	l := lifecycle{
		proposal: forge.Proposal{Head: bbHead, Base: "main", Title: "Update web to 1.2.3", Body: "web: 1.2.2 → 1.2.3",
			Labels: []string{"image-update"}, Reviewers: []string{bbReviewer, bbAccountID}, Assignees: []string{"someone"}, Draft: true},
		opened: opened, edited: &edited, merged: 8, mergeCommit: bbMergeFull,
	}
	l.run(t, forge.NewBitbucketCloud("", token, forge.Options{}), forge.Repo{API: srv.URL + "/2.0", Owner: "team", Name: "deploy"})
	checkExchanges(t, srv, script, "Bearer "+token)
}

// Auto-merge is refused before anything is opened: the API cannot
// schedule a merge, and a pull request meant to merge itself must not
// wait for a person unnoticed.
func TestBitbucketCloudRefusesAutoMerge(t *testing.T) {
	srv := scripted(t, nil)
	f := forge.NewBitbucketCloud("", "token", forge.Options{})
	r := forge.Repo{API: srv.URL + "/2.0", Owner: "team", Name: "deploy"}
	pr, err := f.Open(t.Context(), r, forge.Proposal{Head: bbHead, Base: "main", Title: "t", AutoMerge: true})
	if pr != nil || !errors.Is(err, forge.ErrAutoMergeUnsupported) || !forge.IsPermanent(err) {
		t.Errorf("Open with auto-merge = %+v, %v; want a permanent ErrAutoMergeUnsupported", pr, err)
	}
	checkExchanges(t, srv, nil, "")
}

// A query names branches as the query language quotes strings, so a
// branch name cannot end the string early.
func TestBitbucketCloudQuotesBranches(t *testing.T) {
	script := []exchange{{method: "GET", path: "/2.0/repositories/team/deploy/pullrequests",
		query:  url.Values{"q": {`source.branch.name="a\"b\\c" AND destination.branch.name="main" AND state="OPEN"`}, "pagelen": {"50"}, "page": {"1"}},
		answer: `{"values":[]}`}}
	srv := scripted(t, script)
	f := forge.NewBitbucketCloud("bot", "app-password", forge.Options{})
	if pr, err := f.Find(t.Context(), forge.Repo{API: srv.URL + "/2.0", Owner: "team", Name: "deploy"}, `a"b\c`, "main"); err != nil || pr != nil {
		t.Errorf("Find = %+v, %v; want none", pr, err)
	}
	checkExchanges(t, srv, script, basic("bot", "app-password"))
}

func TestBitbucketCloudRepo(t *testing.T) {
	want := forge.Repo{API: forge.BitbucketCloudAPI, Owner: "team", Name: "deploy"}
	checkRepoURLs(t, forge.BitbucketCloudRepo, []repoURL{
		{name: "https", url: "https://bitbucket.org/team/deploy.git", want: want},
		{name: "https with a user", url: "https://ci-bot@bitbucket.org/team/deploy.git", want: want},
		{name: "https with a password", url: "https://ci-bot:app-password@bitbucket.org/team/deploy", want: want},
		{name: "scp-like", url: "git@bitbucket.org:team/deploy.git", want: want},
		{name: "ssh", url: "ssh://git@bitbucket.org/team/deploy.git", want: want},
		{name: "another host", url: "https://bitbucket.example.com/scm/team/deploy.git", wantErr: true},
		{name: "no repository", url: "https://bitbucket.org/team", wantErr: true},
		{name: "a page of the repository", url: "https://bitbucket.org/team/deploy/src/main", wantErr: true},
		{name: "a walk out of the path", url: "https://bitbucket.org/../deploy", wantErr: true},
		{name: "not a URL", url: "deploy", wantErr: true},
	})
}
