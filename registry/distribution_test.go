package registry

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

// fixedAuth is an Authorizer with one set of credentials.
type fixedAuth struct{ a authn.Authenticator }

func (f fixedAuth) Authenticator(context.Context, string) (authn.Authenticator, error) {
	return f.a, nil
}
func (fixedAuth) Invalidate(string) {}

// The client against the real CNCF distribution registry (Debian's
// docker-registry) with htpasswd auth: tag lists, digests by HEAD, metadata
// of images and a multi-arch index. (distribution 2.8 ignores the page
// size, so pagination is tested in TestListTagsFollowsPages.)
func TestClientAgainstDistribution(t *testing.T) {
	d := testreg.StartDistribution(t, testreg.DistributionOptions{Users: map[string]string{"ci": "s3cret"}})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := range 23 {
		tag := fmt.Sprintf("1.%d.0", i)
		img := testreg.Image(t, base.Add(time.Duration(i)*time.Hour), "linux/amd64")
		if err := remote.Write(d.Ref(t, "team/app:"+tag), img, remote.WithAuth(d.Auth())); err != nil {
			t.Fatalf("pushing %s: %v", tag, err)
		}
		want = append(want, tag)
	}
	idx := testreg.Index(t, map[string]time.Time{
		"linux/amd64": base.Add(48 * time.Hour),
		"linux/arm64": base.Add(49 * time.Hour),
	})
	if err := remote.WriteIndex(d.Ref(t, "team/app:multi"), idx, remote.WithAuth(d.Auth())); err != nil {
		t.Fatalf("pushing the index: %v", err)
	}
	want = append(want, "multi")

	promReg := prometheus.NewRegistry()
	metrics := NewMetrics(promReg)
	c := &Client{
		Hosts:   fastHosts,
		Auth:    fixedAuth{d.Auth()},
		Metrics: metrics,
	}
	repo, err := ParseRepo(d.Host() + "/team/app")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	tags, err := c.ListTags(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(tags)
	slices.Sort(want)
	if !slices.Equal(tags, want) {
		t.Fatalf("tags = %v, want %v", tags, want)
	}
	if got := testutil.ToFloat64(metrics.requests.WithLabelValues(repo.Host(), "list", "200")); got != 1 {
		t.Errorf("tag list requests = %v, want 1", got)
	}

	dg, err := c.Digest(ctx, repo, "multi", 0)
	if err != nil {
		t.Fatal(err)
	}
	md, err := c.Metadata(ctx, repo, "multi", []policy.Platform{{OS: "linux", Architecture: "arm64"}})
	if err != nil {
		t.Fatal(err)
	}
	if md.Digest != dg {
		t.Errorf("metadata digest %s, HEAD digest %s", md.Digest, dg)
	}
	if !md.Created.Equal(base.Add(49 * time.Hour)) {
		t.Errorf("created = %v, want the arm64 child's %v", md.Created, base.Add(49*time.Hour))
	}
	if len(md.Platforms) != 2 {
		t.Errorf("platforms = %v, want amd64 and arm64", md.Platforms)
	}

	// Selection on what the registry returned.
	pol, err := policy.Compile(RepoKey(repo), policy.Spec{Constraint: "^1.20"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := pol.Select(ctx, tags, c.MetadataFunc(repo, pol.Platforms()))
	if err != nil {
		t.Fatal(err)
	}
	if res.Tag != "1.22.0" {
		t.Errorf("selected %s, want 1.22.0", res.Tag)
	}

	// Wrong credentials: a clear error naming the status, not a hang.
	bad := &Client{Hosts: fastHosts, Auth: fixedAuth{&authn.Basic{Username: "ci", Password: "wrong"}}}
	if _, err := bad.ListTags(ctx, repo); err == nil {
		t.Error("listing with a wrong password succeeded")
	} else if !contains(err.Error(), "401") && !contains(err.Error(), "UNAUTHORIZED") {
		t.Errorf("error %q does not say the registry refused the credentials", err)
	}
}
