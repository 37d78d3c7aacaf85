package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"code.gitea.io/sdk/gitea"
	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/yaml"

	"github.com/crowsnest-dev/crowsnest/internal/giteaenv"
)

// giteaWorld is round 8's Gitea: K repositories of giteaenv.Admin's, the
// i-th holding the kustomization of every Application whose image is the
// i-th registry repository, behind a forgeProxy that crowsnest goes
// through. The harness reads Gitea's API directly.
type giteaWorld struct {
	s       scenario
	regHost string
	g       *giteaenv.Gitea
	c       *gitea.Client
	proxy   *forgeProxy
}

// prBase is the branch the pull requests go into.
const prBase = "main"

// maxArchiveBytes bounds a repository archive the harness reads: 20
// small kustomizations are a few KB.
const maxArchiveBytes = 16 << 20

// appsIn returns the Applications whose source is in Git repository k.
func (s scenario) appsIn(k int) []string {
	var apps []string
	for i := k; i < s.N; i += s.K {
		apps = append(apps, s.app(i))
	}
	return apps
}

// reposURL is where the repositories are as crowsnest reaches them
// (through the proxy, no credentials in the URL).
func (w *giteaWorld) reposURL() string { return w.proxy.url() + "/" + giteaenv.Admin }

// seed creates the K repositories, each with one commit on main holding
// its Applications' kustomizations at tag(0).
func (w *giteaWorld) seed(ctx context.Context) error {
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for k := range w.s.K {
		g.Go(func() error {
			name := w.s.gitRepo(k)
			if _, _, err := w.c.CreateRepo(gitea.CreateRepoOption{Name: name, AutoInit: true, DefaultBranch: prBase, Readme: "Default"}); err != nil {
				return fmt.Errorf("creating repository %s: %w", name, err)
			}
			image := w.regHost + "/" + w.s.repo(k)
			var files []*gitea.ChangeFileOperation
			for _, app := range w.s.appsIn(k) {
				files = append(files,
					&gitea.ChangeFileOperation{Operation: "create", Path: "apps/" + app + "/kustomization.yaml",
						Content: base64.StdEncoding.EncodeToString([]byte(kustomization(image, tag(0))))},
					&gitea.ChangeFileOperation{Operation: "create", Path: "apps/" + app + "/deployment.yaml",
						Content: base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\n", app))})
			}
			if _, _, err := w.c.ChangeFiles(giteaenv.Admin, name, gitea.ChangeFilesOptions{Files: files, Message: "seed", Branch: prBase}); err != nil {
				return fmt.Errorf("seeding repository %s: %w", name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// kustomization is an Application's kustomization.yaml deploying image at
// tag.
func kustomization(image, tag string) string {
	return fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- deployment.yaml
namePrefix: prod-
images:
- name: %s
  newTag: %s
`, image, tag)
}

// openPulls returns repository k's open pull requests.
func (w *giteaWorld) openPulls(k int) ([]*gitea.PullRequest, error) {
	prs, _, err := w.c.ListRepoPullRequests(giteaenv.Admin, w.s.gitRepo(k), gitea.ListPullRequestsOptions{
		ListOptions: gitea.ListOptions{PageSize: 50}, State: gitea.StateOpen})
	if err != nil {
		return nil, fmt.Errorf("listing the open pull requests of %s: %w", w.s.gitRepo(k), err)
	}
	return prs, nil
}

// pullCount is how many pull requests repository k has had, open or not.
func (w *giteaWorld) pullCount(k int) (int, error) {
	n := 0
	for page := 1; ; page++ {
		prs, _, err := w.c.ListRepoPullRequests(giteaenv.Admin, w.s.gitRepo(k), gitea.ListPullRequestsOptions{
			ListOptions: gitea.ListOptions{Page: page, PageSize: 50}, State: gitea.StateAll})
		if err != nil {
			return 0, fmt.Errorf("listing the pull requests of %s: %w", w.s.gitRepo(k), err)
		}
		n += len(prs)
		if len(prs) < 50 {
			return n, nil
		}
	}
}

// pullCounts sums pullCount over the repositories.
func (w *giteaWorld) pullCounts() (int, error) {
	total := 0
	for k := range w.s.K {
		n, err := w.pullCount(k)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// carrying counts the Applications of repository k whose kustomization at
// commit sha sets their image's newTag to tagName, from the commit's
// archive (one request).
func (w *giteaWorld) carrying(k int, sha, tagName string) (int, error) {
	body, _, err := w.c.GetArchiveReader(giteaenv.Admin, w.s.gitRepo(k), sha, gitea.TarGZArchive)
	if err != nil {
		return 0, fmt.Errorf("reading %s at %s: %w", w.s.gitRepo(k), sha, err)
	}
	defer body.Close()
	zr, err := gzip.NewReader(io.LimitReader(body, maxArchiveBytes))
	if err != nil {
		return 0, fmt.Errorf("reading %s at %s: %w", w.s.gitRepo(k), sha, err)
	}
	want := map[string]bool{}
	for _, app := range w.s.appsIn(k) {
		want[app] = true
	}
	n := 0
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("reading %s at %s: %w", w.s.gitRepo(k), sha, err)
		}
		// <repo>/apps/<app>/kustomization.yaml
		parts := strings.Split(h.Name, "/")
		if len(parts) != 4 || parts[1] != "apps" || parts[3] != "kustomization.yaml" || !want[parts[2]] {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return 0, err
		}
		var kz struct {
			Images []struct {
				NewTag string `json:"newTag"`
			} `json:"images"`
		}
		if err := yaml.Unmarshal(b, &kz); err != nil {
			return 0, fmt.Errorf("%s at %s: %s: %w", w.s.gitRepo(k), sha, path.Join(parts[1:]...), err)
		}
		if len(kz.Images) == 1 && kz.Images[0].NewTag == tagName {
			n++
		}
	}
}
