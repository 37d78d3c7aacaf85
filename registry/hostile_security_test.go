package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

// hostileTags are names a broken or hostile registry might list: each
// would break a YAML file or a JSON patch, or leave the checkout, if it
// reached a writer. All sort above the valid tags, so a selection that
// did not skip them would pick one.
var hostileTags = []string{
	"../x", "../../etc/passwd", "9.9.9\nimage: evil", "9.9.9\r", "zz: {a: b}", `zz"},{"op":"remove","path":"/spec"}`,
	"zz#comment", "zz'quote", "zz ${HOME}", "zz\x00nul", "zz\u2028", "9.9.9+meta", ".hidden", "-dash",
	strings.Repeat("z", 1024), "9." + strings.Repeat("9", 1024) + ".0",
}

// serveTags makes reg answer the tag list of repo path with tags (in one
// page), and leaves every other request to the real registry.
func serveTags(reg *testreg.OCI, path string, tags []string) {
	reg.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/v2/"+path+"/tags/list" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"name": path, "tags": tags})
		return true
	})
}

// A registry listing hostile tag names next to real images: every policy
// picks a real, valid tag, skips each hostile one as "not a valid OCI
// tag", and never asks the registry about one (no manifest request).
func TestHostileTagNamesAreSkipped(t *testing.T) {
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	for i, tag := range []string{"1.0.0", "1.5.0", "build-7"} {
		reg.Push(t, "team/web:"+tag, testreg.Image(t, t0.Add(time.Duration(i)*time.Hour), "linux/amd64"))
	}
	serveTags(reg, "team/web", append([]string{"1.0.0", "1.5.0", "build-7"}, hostileTags...))
	c := &Client{Hosts: fastHosts}
	repo := repoOf(t, reg, "team/web")
	tags, err := c.Tags(t.Context(), repo, 0)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		spec policy.Spec
		want string
	}{
		{policy.Spec{}, "1.5.0"},
		{policy.Spec{Strategy: "alphabetical"}, "build-7"},
		{policy.Spec{Strategy: "newest-build"}, "build-7"},
		{policy.Spec{Strategy: "alphabetical", Extract: `(?P<version>.*)`, ExtractOrder: "lexical"}, "build-7"},
		{policy.Spec{Platforms: []string{"linux/amd64"}}, "1.5.0"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%+v", tt.spec), func(t *testing.T) {
			reg.Reset()
			p, err := policy.Compile(repo.String(), tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.Explain(t.Context(), tags, c.MetadataFunc(repo, p.Platforms()))
			if err != nil {
				t.Fatal(err)
			}
			if res.Tag != tt.want {
				t.Errorf("selected %q, want %q", res.Tag, tt.want)
			}
			var skipped []string
			for _, cand := range res.Candidates {
				if cand.Reason == policy.ReasonInvalidTag {
					skipped = append(skipped, cand.Tag)
				}
			}
			want := slices.Clone(hostileTags)
			slices.Sort(want)
			slices.Sort(skipped)
			if diff := cmp.Diff(want, skipped); diff != "" {
				t.Errorf("tags skipped as invalid (-want +got):\n%s", diff)
			}
			for _, r := range reg.Requests() {
				for _, h := range hostileTags {
					if strings.HasSuffix(r.Path, "/manifests/"+h) {
						t.Errorf("asked the registry about hostile tag %q", h)
					}
				}
			}
		})
	}
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A repository of 100,000 tags, paged as the distribution spec says, is
// listed whole and selected from; the list costs a few MiB of heap, not
// more (bounded well under MaxTagListBytes).
func TestHundredThousandTags(t *testing.T) {
	const n = 100_000
	all := make([]string, n)
	for i := range all {
		all[i] = fmt.Sprintf("1.%d.%d", i/1000, i%1000)
	}
	sorted := slices.Clone(all)
	slices.Sort(sorted)
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	reg.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/tags/list") {
			return false
		}
		q := r.URL.Query()
		size, _ := strconv.Atoi(q.Get("n"))
		i, _ := slices.BinarySearch(sorted, q.Get("last"))
		if q.Get("last") != "" {
			i++
		}
		page := sorted[i:min(i+size, n)]
		if i+size < n {
			w.Header().Set("Link", fmt.Sprintf(`<%s?n=%d&last=%s>; rel="next"`, r.URL.Path, size, page[len(page)-1]))
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"name": "team/big", "tags": page})
		return true
	})
	h := fast()
	h.PageSize = 1000
	c := &Client{Hosts: sameHosts(h)}
	repo := repoOf(t, reg, "team/big")

	before := heapInUse()
	tags, err := c.Tags(t.Context(), repo, 0)
	if err != nil {
		t.Fatal(err)
	}
	grown := int64(heapInUse()) - int64(before)
	if len(tags) != n {
		t.Fatalf("%d tags, want %d", len(tags), n)
	}
	if limit := int64(16 << 20); grown > limit {
		t.Errorf("holding %d tags grew the heap by %d MiB, want under %d MiB", n, grown>>20, limit>>20)
	}
	p, err := policy.Compile(repo.String(), policy.Spec{Constraint: "<1.50"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Select(t.Context(), tags, nil)
	if err != nil || res.Tag != "1.49.999" {
		t.Errorf("Select = %q, %v; want 1.49.999", res.Tag, err)
	}
	if got := reg.Count("list", "team/big"); got != n/1000 {
		t.Errorf("%d list requests, want %d pages", got, n/1000)
	}
}

// endless writes an endless JSON tag list (or endless pages) and counts
// what it sent.
type endless struct{ sent atomic.Int64 }

func (e *endless) page(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasSuffix(r.URL.Path, "/app/tags/list") {
		return false
	}
	switch {
	case strings.Contains(r.URL.Path, "/huge/"):
		// One page that never ends.
		n, _ := io.WriteString(w, `{"name":"huge","tags":[`)
		e.sent.Add(int64(n))
		chunk := strings.Repeat(`"`+strings.Repeat("a", 100)+`",`, 1000)
		for r.Context().Err() == nil {
			n, err := io.WriteString(w, chunk)
			e.sent.Add(int64(n))
			if err != nil {
				break
			}
		}
	case strings.Contains(r.URL.Path, "/fat/"):
		// Pages of 1,000 1 KiB tags, each pointing to the next, forever.
		last, _ := strconv.Atoi(r.URL.Query().Get("last"))
		tags := make([]string, 1000)
		for i := range tags {
			tags[i] = fmt.Sprintf("%08d-%s", last+i, strings.Repeat("b", 1000))
		}
		w.Header().Set("Link", fmt.Sprintf(`<%s?last=%d>; rel="next"`, r.URL.Path, last+1000))
		b, _ := json.Marshal(map[string]any{"name": "fat", "tags": tags})
		n, _ := w.Write(b)
		e.sent.Add(int64(n))
	default:
		// Empty pages, each pointing to the next, forever.
		last, _ := strconv.Atoi(r.URL.Query().Get("last"))
		w.Header().Set("Link", fmt.Sprintf(`<%s?last=%d>; rel="next"`, r.URL.Path, last+1))
		n, _ := io.WriteString(w, `{"name":"empty","tags":[]}`)
		e.sent.Add(int64(n))
	}
	return true
}

// A registry whose tag list never ends, in one response, in big pages or
// in empty ones, fails the list with ErrTagListTooLarge after a bounded
// amount of reading, and the client keeps working for other repositories.
func TestEndlessTagListsAreCutOff(t *testing.T) {
	for _, path := range []string{"team/huge/app", "team/fat/app", "team/empty/app"} {
		t.Run(path, func(t *testing.T) {
			reg := testreg.StartOCI(t, testreg.OCIOptions{})
			reg.Push(t, "team/ok:1.0.0", testreg.Image(t, t0, "linux/amd64"))
			e := &endless{}
			reg.SetFault(e.page)
			// Reading 32 MiB takes a while under the race detector: no
			// timeout may cut the read short before the bound does.
			hc := fast()
			hc.AttemptTimeout = 10 * time.Minute
			c := &Client{RequestTimeout: 10 * time.Minute, Hosts: sameHosts(hc)}
			_, err := c.Tags(t.Context(), repoOf(t, reg, path), 0)
			if !errors.Is(err, ErrTagListTooLarge) || !strings.Contains(err.Error(), "listing tags of "+reg.Host()+"/"+path) {
				t.Fatalf("err = %v, want ErrTagListTooLarge naming the repository", err)
			}
			// Bounded: what was read is about MaxTagListBytes, plus what
			// was in flight when the client stopped.
			if sent := e.sent.Load(); sent > 2*MaxTagListBytes {
				t.Errorf("the registry sent %d MiB before the client stopped, want about %d MiB", sent>>20, MaxTagListBytes>>20)
			}
			tags, err := c.Tags(t.Context(), repoOf(t, reg, "team/ok"), 0)
			if err != nil || !slices.Equal(tags, []string{"1.0.0"}) {
				t.Errorf("another repository afterwards: %v, %v", tags, err)
			}
		})
	}
}
