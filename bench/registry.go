package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/crowsnest-dev/crowsnest/internal/backoff"
	"github.com/crowsnest-dev/crowsnest/internal/ocireq"
)

// Registry request kinds, as the issue names them (and crowsnest's
// registry metrics: ocireq.Kind).
const (
	kindPing     = ocireq.Ping
	kindToken    = ocireq.Token
	kindList     = ocireq.List
	kindHead     = ocireq.Head
	kindManifest = ocireq.Manifest
	kindBlob     = ocireq.Blob
	kindOther    = ocireq.Other
)

var registryKinds = []string{kindPing, kindToken, kindList, kindHead, kindManifest, kindBlob, kindOther}

// registry is go-containerregistry's in-memory registry on 127.0.0.1.
// Requests are counted by kind, except the harness's own (seeding), which
// carry seedHeader.
type registry struct {
	inner  http.Handler
	srv    *httptest.Server
	host   string
	caFile string // PEM of the server's certificate
	seed   *http.Client
	// latency delays every counted request (round 7): a registry's
	// round trip over a real network, in nanoseconds.
	latency atomic.Int64

	mu     sync.Mutex
	byKind map[string]int
	// listedAt holds, per repository, the times of its tag lists since
	// the last mark, to find each repository's poll tick.
	listedAt map[string][]time.Time
}

func startRegistry(dir string) (*registry, error) {
	r := &registry{
		inner:    ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))),
		byKind:   map[string]int{},
		listedAt: map[string][]time.Time{},
	}
	// TLS, as real registries serve: crowsnest trusts the server's
	// self-signed certificate through its registries config (caFile).
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.StartTLS()
	r.host = strings.TrimPrefix(r.srv.URL, "https://")
	r.caFile = filepath.Join(dir, "registry-ca.pem")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	if err := os.WriteFile(r.caFile, ca, 0o644); err != nil {
		r.srv.Close()
		return nil, err
	}
	r.seed = &http.Client{Transport: seedTransport{r.srv.Client().Transport}}
	return r, nil
}

func (r *registry) close() { r.srv.Close() }

func (r *registry) serve(w http.ResponseWriter, req *http.Request) {
	if req.Header.Get(seedHeader) != "" {
		r.inner.ServeHTTP(w, req)
		return
	}
	kind := ocireq.Kind(req)
	now := time.Now()
	r.mu.Lock()
	r.byKind[kind]++
	if kind == kindList {
		repo := strings.TrimSuffix(strings.TrimPrefix(req.URL.Path, "/v2/"), "/tags/list")
		r.listedAt[repo] = append(r.listedAt[repo], now)
	}
	r.mu.Unlock()
	if d := time.Duration(r.latency.Load()); d > 0 {
		if backoff.Sleep(req.Context(), d) != nil {
			return
		}
	}
	r.inner.ServeHTTP(w, req)
}

// snapshot returns the counts so far and forgets the list times.
func (r *registry) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listedAt = map[string][]time.Time{}
	return maps.Clone(r.byKind)
}

// counts returns the counts so far.
func (r *registry) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.byKind)
}

// firstList returns when each repository was first listed since the last
// snapshot.
func (r *registry) firstList() map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]time.Time, len(r.listedAt))
	for repo, ts := range r.listedAt {
		out[repo] = ts[0]
	}
	return out
}

// listsPerRepo returns how many times each repository was listed since the
// last snapshot.
func (r *registry) listsPerRepo() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.listedAt))
	for repo, ts := range r.listedAt {
		out[repo] = len(ts)
	}
	return out
}

// repeated describes, for at most limit repositories listed more than once
// since the last snapshot, when each list came (seconds after start).
func (r *registry) repeated(start time.Time, limit int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for repo, ts := range r.listedAt {
		if len(ts) < 2 {
			continue
		}
		at := make([]string, len(ts))
		for i, t := range ts {
			at[i] = fmt.Sprintf("%+.1fs", t.Sub(start).Seconds())
		}
		out = append(out, repo+" at "+strings.Join(at, ", "))
	}
	slices.Sort(out)
	return out[:min(len(out), limit)]
}

// seedHeader marks the harness's own requests, which are not counted.
const seedHeader = "X-Bench-Seed"

// seedTransport marks every request as the harness's.
type seedTransport struct{ next http.RoundTripper }

func (t seedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(seedHeader, "1")
	return t.next.RoundTrip(req)
}

// pusher writes tags into one repository of the registry without being
// counted. Every tag of a repository shares one layer; each tag has its
// own config (its created time), so each tag is its own digest and a
// strategy that reads metadata has one manifest and one config per tag.
type pusher struct {
	reg   *registry
	repo  string
	base  v1.Image
	epoch time.Time
}

func (r *registry) pusher(ctx context.Context, repo string) (*pusher, error) {
	img, err := random.Image(256, 1)
	if err != nil {
		return nil, err
	}
	ref, err := name.ParseReference(r.host + "/" + repo + ":base")
	if err != nil {
		return nil, err
	}
	// The layer goes up once; tags then add a config and a manifest.
	if err := remote.Write(ref, img, remote.WithTransport(r.seed.Transport), remote.WithContext(ctx)); err != nil {
		return nil, fmt.Errorf("seeding %s: %w", repo, err)
	}
	return &pusher{reg: r, repo: repo, base: img, epoch: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, nil
}

// push tags the i-th version: created i hours after the epoch.
func (p *pusher) push(ctx context.Context, tag string, i int) error {
	cf, err := p.base.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: p.epoch.Add(time.Duration(i) * time.Hour)}
	img, err := mutate.ConfigFile(p.base, cf)
	if err != nil {
		return err
	}
	cfgBytes, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	cfgDigest, err := img.ConfigName()
	if err != nil {
		return err
	}
	if err := p.put(ctx, http.MethodPost, "/blobs/uploads/?digest="+cfgDigest.String(), "application/octet-stream", cfgBytes); err != nil {
		return err
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	return p.put(ctx, http.MethodPut, "/manifests/"+tag, string(mt), manifest)
}

func (p *pusher) put(ctx context.Context, method, path, contentType string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, method, "https://"+p.reg.host+"/v2/"+p.repo+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := p.reg.seed.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("seeding %s %s: %s: %s", p.repo, path, resp.Status, msg)
	}
	return nil
}

// distributionEnvelope is the CNCF distribution registry's notification
// body for pushes of tag to repos, the format crowsnest's
// registries.webhook "distribution" source reads.
func distributionEnvelope(host, tag string, repos []string) []byte {
	type target struct {
		Repository string `json:"repository"`
		Tag        string `json:"tag"`
		URL        string `json:"url"`
		MediaType  string `json:"mediaType"`
	}
	type event struct {
		ID        string            `json:"id"`
		Timestamp time.Time         `json:"timestamp"`
		Action    string            `json:"action"`
		Target    target            `json:"target"`
		Request   map[string]string `json:"request"`
	}
	var env struct {
		Events []event `json:"events"`
	}
	now := time.Now().UTC()
	for i, repo := range repos {
		env.Events = append(env.Events, event{
			ID: fmt.Sprintf("bench-%d", i), Timestamp: now, Action: "push",
			Target: target{
				Repository: repo, Tag: tag, MediaType: "application/vnd.oci.image.manifest.v1+json",
				URL: "https://" + host + "/v2/" + repo + "/manifests/" + tag,
			},
			Request: map[string]string{"host": host, "method": "PUT"},
		})
	}
	b, _ := json.Marshal(env)
	return b
}
