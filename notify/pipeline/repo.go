package pipeline

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/lru"

	"github.com/crowsnest-dev/crowsnest/notify/render"
	"github.com/crowsnest-dev/crowsnest/watcher"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// Repo defaults: a template waits at most 30s for Git (then its
// render fails); 1024 commits and 256 source details cover many busy
// Applications; a source at a branch or tag is read again after a minute.
const (
	DefaultRepoTimeout   = 30 * time.Second
	DefaultRepoCommits   = 1024
	DefaultRepoDetails   = 256
	DefaultRepoDetailTTL = time.Minute
	// maxSourceFileBytes bounds a values file or kustomization read for
	// GetAppDetails, and maxSourceBytes all of them together.
	maxSourceFileBytes = 1 << 20
	maxSourceBytes     = 4 << 20
	// maxValueFiles bounds the value files GetAppDetails reads: the
	// Application's author lists them, and Argo CD users list a few.
	maxValueFiles = 32
)

// Repo answers templates' and triggers' repo.GetCommitMetadata and
// repo.GetAppDetails from crowsnest's Git clone cache (Git's, shared
// with write-back, so one repository has one clone). The repository is
// always the Application's own source (spec.source.repoURL, as Argo CD);
// credentials are those Git's CredentialsSource finds for that URL
// (crowsnest run's repocreds.ArgoCD: Argo CD's repository Secret for
// the exact URL, else the longest repo-creds prefix on the same host),
// never a Secret the Application names. Commit metadata is cached per
// repository and commit (it never changes), details per source and
// revision.
type Repo struct {
	Git *gitwb.Writer
	// Policy, when set, refuses a repository the Application may not
	// read (crowsnest run's tenancy check: its AppProject's
	// sourceRepos); the render then fails.
	Policy RepoPolicy
	// Timeout bounds one call, waiting for the clone included
	// (DefaultRepoTimeout when 0).
	Timeout time.Duration
	// MaxCommits and MaxDetails bound the caches (defaults when 0).
	MaxCommits, MaxDetails int
	// DetailTTL is how long details of a source at a branch or tag are
	// reused (DefaultRepoDetailTTL when 0).
	DetailTTL time.Duration
	Now       func() time.Time

	once    sync.Once
	commits *lruCache[render.CommitMetadata]
	details *lruCache[detailEntry]
}

var _ render.RepoLookup = (*Repo)(nil)

type detailEntry struct {
	d       render.AppDetail
	expires time.Time // zero: never (a source at a commit SHA)
}

func (r *Repo) init() {
	r.once.Do(func() {
		r.commits = newLRUCache[render.CommitMetadata](positiveOr(r.MaxCommits, DefaultRepoCommits))
		r.details = newLRUCache[detailEntry](positiveOr(r.MaxDetails, DefaultRepoDetails))
	})
}

func positiveOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

func (r *Repo) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// ctx bounds one call and names app's AppProject for the credentials
// lookup (Argo CD's project-scoped repository Secrets).
func (r *Repo) ctx(ctx context.Context, app map[string]any) (context.Context, context.CancelFunc) {
	t := r.Timeout
	if t <= 0 {
		t = DefaultRepoTimeout
	}
	spec, _ := app["spec"].(map[string]any)
	project, _ := spec["project"].(string)
	return context.WithTimeout(gitwb.WithProject(ctx, cmp.Or(project, "default")), t)
}

// CommitMetadata implements render.RepoLookup.
func (r *Repo) CommitMetadata(ctx context.Context, app map[string]any, sha string) (render.CommitMetadata, error) {
	r.init()
	spec, _ := app["spec"].(map[string]any)
	source, _ := spec["source"].(map[string]any)
	repoURL, _ := source["repoURL"].(string)
	if repoURL == "" {
		// Argo CD reads spec.source only: a multi-source Application has
		// no commit metadata there either.
		return render.CommitMetadata{}, errors.New("the Application has no spec.source.repoURL")
	}
	if err := r.check(app, repoURL); err != nil {
		return render.CommitMetadata{}, err
	}
	sha = strings.ToLower(strings.TrimSpace(sha))
	key := gitwb.RepoID(repoURL) + "\x00" + sha
	if md, ok := r.commits.get(key); ok {
		return md, nil
	}
	if r.Git == nil {
		return render.CommitMetadata{}, render.ErrNoRepoAccess
	}
	ctx, cancel := r.ctx(ctx, app)
	defer cancel()
	md, err := r.Git.CommitMetadata(ctx, repoURL, sha)
	if err != nil {
		return render.CommitMetadata{}, err
	}
	out := render.CommitMetadata{Message: md.Message, Author: md.Author, Date: md.Date, Tags: md.Tags}
	if len(sha) == 40 {
		// Tags can be added later, but Argo CD's repo server caches
		// revision metadata per commit too.
		r.commits.add(key, out)
	}
	return out, nil
}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// AppDetails implements render.RepoLookup.
func (r *Repo) AppDetails(ctx context.Context, app map[string]any) (render.AppDetail, error) {
	r.init()
	spec, _ := app["spec"].(map[string]any)
	source, _ := spec["source"].(map[string]any)
	if source == nil {
		if sources, _ := spec["sources"].([]any); len(sources) > 0 {
			source, _ = sources[0].(map[string]any)
		}
	}
	if source == nil {
		return render.AppDetail{}, errors.New("the Application has no source")
	}
	if !render.NeedsRepo(source) {
		return render.BuildAppDetail(source, render.SourceFiles{})
	}
	repoURL, _ := source["repoURL"].(string)
	if repoURL == "" {
		return render.AppDetail{}, errors.New("the Application's source has no repoURL")
	}
	if err := r.check(app, repoURL); err != nil {
		return render.AppDetail{}, err
	}
	srcJSON, err := json.Marshal(source)
	if err != nil {
		return render.AppDetail{}, err
	}
	revision, _ := source["targetRevision"].(string)
	key := gitwb.RepoID(repoURL) + "\x00" + string(srcJSON)
	if e, ok := r.details.get(key); ok && (e.expires.IsZero() || r.now().Before(e.expires)) {
		return e.d, nil
	}
	if r.Git == nil {
		return render.AppDetail{}, render.ErrNoRepoAccess
	}
	ctx, cancel := r.ctx(ctx, app)
	defer cancel()
	read, extra := render.SourceReads(source)
	if len(extra) > maxValueFiles {
		return render.AppDetail{}, fmt.Errorf("helm.valueFiles: %d files in the repository, more than the %d GetAppDetails reads", len(extra), maxValueFiles)
	}
	p, _ := source["path"].(string)
	dir, err := r.Git.ReadDir(ctx, repoURL, revision, p, read, gitwb.ReadLimits{File: maxSourceFileBytes, Total: maxSourceBytes}, extra...)
	if err != nil {
		return render.AppDetail{}, err
	}
	d, err := render.BuildAppDetail(source, render.SourceFiles{Found: dir.Found, Names: dir.Names, Files: dir.Files})
	if err != nil {
		return render.AppDetail{}, err
	}
	e := detailEntry{d: d}
	if !fullSHA.MatchString(strings.ToLower(revision)) {
		ttl := r.DetailTTL
		if ttl <= 0 {
			ttl = DefaultRepoDetailTTL
		}
		e.expires = r.now().Add(ttl)
	}
	r.details.add(key, e)
	return d, nil
}

// check applies Policy to the Application the map is.
func (r *Repo) check(app map[string]any, repoURL string) error {
	if r.Policy == nil {
		return nil
	}
	meta, _ := app["metadata"].(map[string]any)
	spec, _ := app["spec"].(map[string]any)
	a := &watcher.App{}
	a.Namespace, _ = meta["namespace"].(string)
	a.Name, _ = meta["name"].(string)
	a.Project, _ = spec["project"].(string)
	if err := r.Policy.CheckRepository(a, repoURL); err != nil {
		return fmt.Errorf("reading %s: %w", gitwb.RepoID(repoURL), err)
	}
	return nil
}

// lruCache is k8s.io/utils/lru with typed values.
type lruCache[V any] struct{ c *lru.Cache }

func newLRUCache[V any](maxEntries int) *lruCache[V] {
	return &lruCache[V]{c: lru.New(maxEntries)}
}

func (l *lruCache[V]) get(key string) (V, bool) {
	v, ok := l.c.Get(key)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

func (l *lruCache[V]) add(key string, val V) { l.c.Add(key, val) }
