package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/crowsnest-dev/crowsnest/registry/policy"
	"github.com/crowsnest-dev/crowsnest/registry/verify"
)

// verdictEntry is a remembered signature check. A digest that passed
// stays passed (its signature and the keys do not change under the same
// fingerprint); one that did not is asked again after TagTTL, since a
// signature is often pushed a little after its image.
type verdictEntry struct {
	verdict verify.Verdict
	checked time.Time
}

// Verify checks that repo's digest carries a cosign signature by one of
// keys (see verify.Check), through the same credentials, pacing and
// retries as every other request for repo. Results are cached by
// repository, digest and key set, so a steady-state poll asks the
// registry nothing.
func (c *Client) Verify(ctx context.Context, repo Repository, digest string, keys *verify.KeySet) (verify.Verdict, error) {
	c.init()
	key := "verify\x00" + RepoKey(repo) + "\x00" + digest + "\x00" + keys.Fingerprint()
	if v, ok := c.cachedVerdict(key); ok {
		c.Metrics.cacheResult("signature", "hit")
		return v, nil
	}
	res, err, shared := c.flight.Do(key, func() (any, error) {
		if v, ok := c.cachedVerdict(key); ok {
			return v, nil
		}
		v, err := verify.Check(ctx, signatureSource{c: c, repo: repo}, digest, keys)
		if err != nil {
			c.Metrics.signatureCheck("error")
			return nil, fmt.Errorf("checking the signature of %s@%s: %w", RepoKey(repo), digest, err)
		}
		c.Metrics.signatureCheck(verdictLabel(v))
		if !v.OK() {
			// Once per digest and key set checked (a refusal is asked
			// again after TagTTL), not on every selection.
			c.Log.Info("image signature not verified", "repository", RepoKey(repo), "digest", digest, "reason", v.String())
		}
		c.meta.Add(key, verdictEntry{verdict: v, checked: c.Now()})
		return v, nil
	})
	c.countFlight("signature", shared)
	if err != nil {
		return verify.Verdict{}, err
	}
	return res.(verify.Verdict), nil
}

func (c *Client) cachedVerdict(key string) (verify.Verdict, bool) {
	v, ok := c.meta.Get(key)
	if !ok {
		return verify.Verdict{}, false
	}
	e, ok := v.(verdictEntry)
	if !ok || (!e.verdict.OK() && c.Now().Sub(e.checked) >= c.TagTTL) {
		return verify.Verdict{}, false
	}
	return e.verdict, true
}

// verdictLabel is the metric label of a verdict.
func verdictLabel(v verify.Verdict) string {
	switch v.Reason {
	case "":
		return "verified"
	case verify.ReasonNoSignature:
		return "no-signature"
	case verify.ReasonWrongKey:
		return "wrong-key"
	case verify.ReasonOtherDigest:
		return "other-digest"
	default:
		return "bad-payload"
	}
}

// VerifyFunc adapts Verify for policy.Policy's selection: a tag's digest
// passes or is refused with the verdict's reason.
func (c *Client) VerifyFunc(repo Repository, keys *verify.KeySet) policy.VerifyFunc {
	return func(ctx context.Context, digest string) (string, error) {
		v, err := c.Verify(ctx, repo, digest, keys)
		if err != nil || v.OK() {
			return "", err
		}
		return v.String(), nil
	}
}

// signatureSource reads signature artifacts of one repository through
// the client's authenticated, paced path.
type signatureSource struct {
	c    *Client
	repo Repository
}

var _ verify.Source = signatureSource{}

func (s signatureSource) Referrers(ctx context.Context, digest string) ([]v1.Descriptor, error) {
	var out []v1.Descriptor
	err := s.c.do(ctx, s.repo, func(ctx context.Context, p *remote.Puller, repo name.Repository) error {
		idx, err := remote.Referrers(repo.Digest(digest), remote.Reuse(p), remote.WithContext(ctx))
		if err != nil {
			return err
		}
		m, err := idx.IndexManifest()
		if err != nil {
			return err
		}
		out = m.Manifests
		return nil
	})
	return out, err
}

func (s signatureSource) Manifest(ctx context.Context, ref string) ([]byte, error) {
	var out []byte
	err := s.c.do(ctx, s.repo, func(ctx context.Context, p *remote.Puller, repo name.Repository) error {
		var r name.Reference = repo.Tag(ref)
		if h, err := v1.NewHash(ref); err == nil {
			r = repo.Digest(h.String())
		}
		desc, err := p.Get(ctx, r)
		if err != nil {
			return err
		}
		out = desc.Manifest
		return nil
	})
	var te *transport.Error
	if errors.As(err, &te) && te.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%s: %w", ref, verify.ErrNotFound)
	}
	return out, err
}

func (s signatureSource) Blob(ctx context.Context, digest string, limit int64) ([]byte, error) {
	var out []byte
	err := s.c.do(ctx, s.repo, func(ctx context.Context, p *remote.Puller, repo name.Repository) error {
		l, err := p.Layer(ctx, repo.Digest(digest))
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		defer rc.Close()
		out, err = io.ReadAll(io.LimitReader(rc, limit))
		return err
	})
	return out, err
}
