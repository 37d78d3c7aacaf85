package registry

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

// manifestInfo is what crowsnest keeps of one manifest digest: for an
// image its platform and created time, for an index its children; for
// both the source revision and repository the manifest (or an image's
// config labels) states.
type manifestInfo struct {
	index    bool
	platform policy.Platform
	created  time.Time
	children []childManifest
	prov     provenance
}

type childManifest struct {
	digest   string
	platform policy.Platform
}

// unknownPlatform marks attestation manifests in BuildKit indexes; they
// are not images anyone runs.
const unknownPlatform = "unknown"

// Metadata reads what selection needs to know about repo:tag: its digest
// (HEAD), platforms and created time, and what pull request bodies show:
// its source revision and repository. Only children of an index that match
// want (all runnable ones when want is empty) have their config read; an
// index that does not state its source takes the first of those children's
// that do. Everything is cached by digest, so a digest is fetched once.
func (c *Client) Metadata(ctx context.Context, repo Repository, tag string, want []policy.Platform) (policy.Metadata, error) {
	digest, err := c.Digest(ctx, repo, tag, 0)
	if err != nil {
		return policy.Metadata{}, err
	}
	info, err := c.manifest(ctx, repo, digest)
	if err != nil {
		return policy.Metadata{}, fmt.Errorf("reading metadata of %s:%s: %w", RepoKey(repo), tag, err)
	}
	md := policy.Metadata{Digest: digest}
	prov := info.prov
	if !info.index {
		md.Platforms = []policy.Platform{info.platform}
		md.Created = info.created
		md.Revision, md.Source = prov.revision, prov.source
		return md, nil
	}
	md.CreatedByPlatform = map[policy.Platform]time.Time{}
	for _, ch := range info.children {
		md.Platforms = append(md.Platforms, ch.platform)
		if len(want) > 0 && !slices.ContainsFunc(want, func(p policy.Platform) bool { return platformMatches(p, ch.platform) }) {
			continue
		}
		child, err := c.manifest(ctx, repo, ch.digest)
		if err != nil {
			return policy.Metadata{}, fmt.Errorf("reading metadata of %s:%s (%s): %w", RepoKey(repo), tag, formatPlatform(ch.platform), err)
		}
		md.CreatedByPlatform[ch.platform] = child.created
		prov.merge(child.prov)
		if child.created.After(md.Created) {
			md.Created = child.created
		}
	}
	md.Revision, md.Source = prov.revision, prov.source
	return md, nil
}

// MetadataFunc adapts Metadata for policy.Policy.Select.
func (c *Client) MetadataFunc(repo Repository, want []policy.Platform) policy.MetadataFunc {
	return func(ctx context.Context, tag string) (policy.Metadata, error) {
		return c.Metadata(ctx, repo, tag, want)
	}
}

// cachedManifest reads the metadata cache: digests to manifest facts,
// bounded, the least recently used dropped first. Entries never go
// stale: a digest names immutable content.
func (c *Client) cachedManifest(digest string) (manifestInfo, bool) {
	v, ok := c.meta.Get(digest)
	if !ok {
		return manifestInfo{}, false
	}
	info, ok := v.(manifestInfo)
	return info, ok
}

// manifest returns the facts of one manifest digest, from the cache or by
// reading the manifest (and, for an image, its config blob).
func (c *Client) manifest(ctx context.Context, repo Repository, digest string) (manifestInfo, error) {
	c.init()
	if info, ok := c.cachedManifest(digest); ok {
		c.Metrics.cacheResult("manifest", "hit")
		return info, nil
	}
	v, err, shared := c.flight.Do("manifest\x00"+digest, func() (any, error) {
		// A flight that ended between our cache check and this one
		// filled the cache: do not fetch again.
		if info, ok := c.cachedManifest(digest); ok {
			return info, nil
		}
		var info manifestInfo
		err := c.do(ctx, repo, func(ctx context.Context, p *remote.Puller, repo name.Repository) error {
			var err error
			info, err = fetchManifest(ctx, p, repo.Digest(digest))
			return err
		})
		if err != nil {
			return nil, err
		}
		c.meta.Add(digest, info)
		return info, nil
	})
	if shared {
		c.Metrics.cacheResult("manifest", "shared")
	} else {
		c.Metrics.cacheResult("manifest", "miss")
	}
	if err != nil {
		return manifestInfo{}, err
	}
	return v.(manifestInfo), nil
}

func fetchManifest(ctx context.Context, p *remote.Puller, ref name.Digest) (manifestInfo, error) {
	desc, err := p.Get(ctx, ref)
	if err != nil {
		return manifestInfo{}, err
	}
	if desc.MediaType.IsIndex() {
		im, err := v1.ParseIndexManifest(bytes.NewReader(desc.Manifest))
		if err != nil {
			return manifestInfo{}, fmt.Errorf("parsing index %s: %w", ref.DigestStr(), err)
		}
		info := manifestInfo{index: true}
		info.prov.fill(im.Annotations)
		for i := range im.Manifests {
			m := &im.Manifests[i]
			if m.Platform == nil || m.Platform.OS == unknownPlatform || !m.MediaType.IsImage() {
				continue
			}
			info.children = append(info.children, childManifest{digest: m.Digest.String(), platform: fromV1(*m.Platform)})
		}
		return info, nil
	}
	if !desc.MediaType.IsImage() {
		return manifestInfo{}, fmt.Errorf("%s is a %s, not an image", ref.DigestStr(), desc.MediaType)
	}
	img, err := desc.Image()
	if err != nil {
		return manifestInfo{}, err
	}
	m, err := img.Manifest() // parses desc.Manifest: no request
	if err != nil {
		return manifestInfo{}, fmt.Errorf("parsing manifest %s: %w", ref.DigestStr(), err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return manifestInfo{}, fmt.Errorf("reading image config of %s: %w", ref.DigestStr(), err)
	}
	info := manifestInfo{
		platform: policy.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant},
		created:  cf.Created.Time,
	}
	info.prov.fill(m.Annotations)
	info.prov.fill(cf.Config.Labels)
	return info, nil
}

func fromV1(p v1.Platform) policy.Platform {
	return policy.Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}
}

// platformMatches reports whether an image built for have runs where want
// asks; a want without variant accepts every variant.
func platformMatches(want, have policy.Platform) bool {
	return want.OS == have.OS && want.Architecture == have.Architecture &&
		(want.Variant == "" || want.Variant == have.Variant)
}

func formatPlatform(p policy.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}
