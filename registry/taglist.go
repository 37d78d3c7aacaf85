package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/crowsnest-dev/crowsnest/internal/bodycap"
)

// Tag-list bounds: a repository's list, all pages together, holds at most
// MaxTagListBytes of tag names, and no one response may be larger, so a
// broken or hostile registry (an endless page, endless next links) cannot
// take the daemon's memory. 32 MiB is over a million typical tags, ten
// times the largest real repositories; 10,000 pages of even 100 tags hold
// a million.
const (
	MaxTagListBytes = 32 << 20
	maxTagPages     = 10_000
)

// ErrTagListTooLarge is returned when a repository's tag list exceeds
// MaxTagListBytes or its pages never end.
var ErrTagListTooLarge = errors.New("tag list too large")

// ErrTagListLoop is returned when a tag list's next-page links lead back
// to a page already read.
var ErrTagListLoop = errors.New("tag list pages loop")

// listTags lists every tag of repo, page by page, within the bounds. The
// result is never nil: nil tells selection the list is unknown. A next
// link to a page already read is ErrTagListLoop, not the tags so far: a
// partial list could select an older tag than the newest one. The links
// followed count towards MaxTagListBytes, so remembering them is bounded
// too.
func listTags(ctx context.Context, p *remote.Puller, repo name.Repository) ([]string, error) {
	lister, err := p.Lister(ctx, repo)
	if err != nil {
		return nil, err
	}
	tags, size := []string{}, 0
	seen := map[string]bool{}
	for pages := 0; lister.HasNext(); pages++ {
		page, err := lister.Next(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range page.Tags {
			size += len(t)
		}
		size += len(page.Next)
		if size > MaxTagListBytes || pages >= maxTagPages {
			return nil, fmt.Errorf("%w: more than %d MiB of tags or %d pages", ErrTagListTooLarge, MaxTagListBytes>>20, maxTagPages)
		}
		if page.Next != "" {
			if seen[page.Next] {
				return nil, fmt.Errorf("%w: page %d links back to a page already read", ErrTagListLoop, pages+1)
			}
			seen[page.Next] = true
		}
		tags = append(tags, page.Tags...)
	}
	return tags, nil
}

// capTagLists bounds the body of every tag-list response.
type capTagLists struct{ http.RoundTripper }

func (c capTagLists) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.RoundTripper.RoundTrip(req)
	if err == nil && strings.HasSuffix(req.URL.Path, "/tags/list") {
		resp.Body = &bodycap.Reader{ReadCloser: resp.Body, Left: MaxTagListBytes,
			Err: fmt.Errorf("%w: a response larger than %d MiB", ErrTagListTooLarge, MaxTagListBytes>>20)}
	}
	return resp, err
}
