package forge_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-github/v93/github"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/writeback/forge"
)

const (
	ghParent = "5555555555555555555555555555555555555555"
	ghTree   = "6666666666666666666666666666666666666666"
	ghBlob   = "7777777777777777777777777777777777777777"
	ghNew    = "8888888888888888888888888888888888888888"
)

// githubGitData answers the Git database API as GitHub does.
func githubGitData(r testnotify.Request) testnotify.Answer {
	p := r.Path
	switch {
	case strings.HasSuffix(p, "/git/blobs"):
		return jsonAnswer(http.StatusCreated, `{"sha":"`+ghBlob+`","url":"x"}`)
	case strings.HasSuffix(p, "/git/trees"):
		return jsonAnswer(http.StatusCreated, `{"sha":"`+ghTree+`","tree":[]}`)
	case strings.HasSuffix(p, "/git/commits"):
		return jsonAnswer(http.StatusCreated, `{"sha":"`+ghNew+`","message":"m"}`)
	case strings.Contains(p, "/git/ref/"):
		return jsonAnswer(0, `{"ref":"refs/heads/crowsnest/main","object":{"sha":"`+ghParent+`","type":"commit"}}`)
	}
	return jsonAnswer(0, `{"ref":"refs/heads/crowsnest/main","object":{"sha":"`+ghNew+`","type":"commit"}}`)
}

// What crowsnest sends to commit through GitHub's API is what go-github
// sends for the same blobs, tree, commit and ref.
func TestGitHubCommitConformance(t *testing.T) {
	const owner, name, branch = "team", "deploy", "crowsnest/main"
	files := []forge.CommitFile{
		{Path: "web/kustomization.yaml", Content: []byte("images:\n- name: web\n  newTag: 1.2.3\n")},
		{Path: "bin/run.sh", Content: []byte{0, 1, 2, 0xff}, Mode: "100755"},
		{Path: "old.yaml", Delete: true},
	}
	theirsCommit := func(ctx context.Context, c *github.Client) (string, error) {
		var entries []*github.TreeEntry
		for _, f := range files {
			if f.Delete {
				entries = append(entries, &github.TreeEntry{Path: new(f.Path), Mode: new("100644"), Type: new("blob")})
				continue
			}
			b, _, err := c.Git.CreateBlob(ctx, owner, name, github.Blob{Content: base64.StdEncoding.EncodeToString(f.Content), Encoding: new("base64")})
			if err != nil {
				return "", err
			}
			mode := f.Mode
			if mode == "" {
				mode = "100644"
			}
			entries = append(entries, &github.TreeEntry{Path: new(f.Path), Mode: new(mode), Type: new("blob"), SHA: b.SHA})
		}
		tree, _, err := c.Git.CreateTree(ctx, owner, name, ghParent+"t", entries)
		if err != nil {
			return "", err
		}
		commit, _, err := c.Git.CreateCommit(ctx, owner, name, github.Commit{Message: new("Update web to 1.2.3\n\nweb: 1.2.3"),
			Tree: &github.Tree{SHA: tree.SHA}, Parents: []*github.Commit{{SHA: new(ghParent)}}}, nil)
		if err != nil {
			return "", err
		}
		return commit.GetSHA(), nil
	}
	commit := forge.Commit{Branch: branch, Parent: ghParent, BaseTree: ghParent + "t", Message: "Update web to 1.2.3\n\nweb: 1.2.3", Files: files}
	tests := []struct {
		name   string
		ref    forge.RefUpdate
		theirs func(ctx context.Context, c *github.Client) error
	}{
		{"fast-forward", forge.RefFastForward, func(ctx context.Context, c *github.Client) error {
			sha, err := theirsCommit(ctx, c)
			if err != nil {
				return err
			}
			_, _, err = c.Git.UpdateRef(ctx, owner, name, "refs/heads/"+branch, github.UpdateRef{SHA: sha, Force: new(false)})
			return err
		}},
		{"create the branch", forge.RefCreate, func(ctx context.Context, c *github.Client) error {
			sha, err := theirsCommit(ctx, c)
			if err != nil {
				return err
			}
			_, _, err = c.Git.CreateRef(ctx, owner, name, github.CreateRef{Ref: "refs/heads/" + branch, SHA: sha})
			return err
		}},
		{"force with a lease", forge.RefForce, func(ctx context.Context, c *github.Client) error {
			if _, _, err := c.Git.GetRef(ctx, owner, name, "heads/"+branch); err != nil {
				return err
			}
			sha, err := theirsCommit(ctx, c)
			if err != nil {
				return err
			}
			_, _, err = c.Git.UpdateRef(ctx, owner, name, "refs/heads/"+branch, github.UpdateRef{SHA: sha, Force: new(true)})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ours, theirs := recordBoth(t, githubGitData, func(rec *testnotify.Recorder) error {
				c := commit
				c.Ref, c.Lease = tt.ref, ghParent
				sha, err := forge.NewGitHub(ghToken, forge.Options{}).Commit(t.Context(), forge.Repo{API: rec.URL + "/api/v3", Owner: owner, Name: name}, c)
				if err == nil && sha != ghNew {
					t.Errorf("sha = %s, want %s", sha, ghNew)
				}
				return err
			}, func(rec *testnotify.Recorder) error {
				return tt.theirs(t.Context(), ghClient(t, rec, ghToken))
			})
			if diff := cmp.Diff(wireCalls(t, theirs, "/api/v3", ghWireHeaders...), wireCalls(t, ours, "/api/v3", ghWireHeaders...)); diff != "" {
				t.Errorf("crowsnest's requests differ from go-github's (-go-github +crowsnest):\n%s", diff)
			}
		})
	}
}

// A ref GitHub refuses to move (422), or a lease that no longer holds,
// is ErrBranchMoved; the token stays out of the error.
func TestGitHubCommitBranchMoved(t *testing.T) {
	tests := []struct {
		name   string
		ref    forge.RefUpdate
		answer func(testnotify.Request) testnotify.Answer
	}{
		{"not a fast forward", forge.RefFastForward, func(r testnotify.Request) testnotify.Answer {
			if r.Method == http.MethodPatch {
				return jsonAnswer(http.StatusUnprocessableEntity, `{"message":"Update is not a fast forward","token":"`+ghToken+`"}`)
			}
			return githubGitData(r)
		}},
		{"branch created meanwhile", forge.RefCreate, func(r testnotify.Request) testnotify.Answer {
			if strings.HasSuffix(r.Path, "/git/refs") {
				return jsonAnswer(http.StatusUnprocessableEntity, `{"message":"Reference already exists"}`)
			}
			return githubGitData(r)
		}},
		{"lease lost", forge.RefForce, githubGitData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := testnotify.NewRecorder(t, testnotify.RecorderOptions{Answer: tt.answer})
			_, err := forge.NewGitHub(ghToken, forge.Options{}).Commit(t.Context(), forge.Repo{API: rec.URL + "/api/v3", Owner: "team", Name: "deploy"},
				forge.Commit{Branch: "main", Parent: ghParent, Message: "m", Ref: tt.ref, Lease: "9999999999999999999999999999999999999999",
					Files: []forge.CommitFile{{Path: "a", Content: []byte("a")}}})
			if !errors.Is(err, forge.ErrBranchMoved) {
				t.Fatalf("err = %v, want ErrBranchMoved", err)
			}
			if strings.Contains(err.Error(), ghToken) {
				t.Errorf("the token is in the error: %v", err)
			}
		})
	}
}
