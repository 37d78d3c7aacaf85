package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// gitRound (round 4): every Application in Git mode, all sources in one
// monorepo; from process start until the repository's main branch holds
// every Application's newest tag.
func (e *env) gitRound(ctx context.Context) (result, error) {
	const ns, repo = "bench-git", "deploy"
	r := e.newResult("4", "Git mode, one monorepo", e.s.N)
	dir := filepath.Join(e.dir, "git")
	if err := os.MkdirAll(filepath.Join(dir, "repos"), 0o755); err != nil {
		return r, err
	}
	gs, err := startGitServer(filepath.Join(dir, "repos"))
	if err != nil {
		return r, err
	}
	defer gs.close()
	files := make(map[string]string, 2*e.s.N)
	for i := range e.s.N {
		app := e.s.app(i)
		files["apps/"+app+"/kustomization.yaml"] = "resources:\n- deployment.yaml\nnamePrefix: prod-\n"
		files["apps/"+app+"/deployment.yaml"] = fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n", app)
	}
	if err := gs.createRepo(repo, files); err != nil {
		return r, err
	}
	if err := e.cluster.createNamespace(ctx, ns); err != nil {
		return r, err
	}
	if err := e.cluster.createGitSecret(ctx, ns, gs.repoURL(repo)); err != nil {
		return r, err
	}
	p := appParams{ns: ns, regHost: e.reg.host, repoURL: gs.repoURL(repo), kind: kindGit}
	if err := e.cluster.createApps(ctx, ns, e.s.N, func(i int) (map[string]any, map[string]any) { return e.s.appObject(p, i) }); err != nil {
		return r, err
	}
	d, m, err := e.launch(dir, ns, "", gs)
	if err != nil {
		return r, err
	}
	defer d.stop()

	want := ":" + tag(e.newest) // round 3 may have pushed newer tags
	stopProfile := e.profileRound(ctx, d, "4")
	defer stopProfile()
	deadline := time.Now().Add(e.opts.roundTimeout)
	var last string
	for r.Done < e.s.N {
		if err := d.exited(); err != nil {
			return r, err
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("round 4: %d of %d Applications' files carry %s after %s%s", r.Done, e.s.N, want, e.opts.roundTimeout, exitNote(d))
		}
		head, err := gs.head(repo)
		if err != nil {
			return r, err
		}
		if head != last {
			last = head
			if r.Done, err = gs.filesContaining(repo, head, want); err != nil {
				return r, err
			}
			r.WallSeconds = secs(time.Since(d.started))
			continue
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.markDone()
	stopProfile()
	if err := e.endRound(ctx, m, &r, 2*time.Second); err != nil {
		return r, err
	}
	n, err := gs.commits(repo)
	if err != nil {
		return r, err
	}
	r.Commits = n - 1 // the seed
	r.note("wall is from process start until the harness saw the last commit (polled every 50 ms)")
	e.checkRegistry(&r, 1)
	if e.s.Name == "S2" {
		r.check("S2 Git mode: all updates in at most 5 commits", "<= 5", fmt.Sprint(r.Commits), r.Commits <= 5)
		r.check("S2 Git mode: under 30 s", "< 30 s", fmt.Sprintf("%.2f s", r.WallSeconds), r.WallSeconds < 30)
	}
	return r, nil
}
