package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// A registry whose tag-list Link headers loop (a page linking to itself,
// page 2 back to page 1, a longer cycle, back to the first page by its
// bare path) fails the list with ErrTagListLoop after a few requests,
// instead of reading the same pages until the page cap.
func TestTagListLinkLoops(t *testing.T) {
	// next gives the Link target for a request: pages are ?page=N, the
	// first page has no query.
	tests := []struct {
		name     string
		next     func(page string) string
		wantMost int // list requests at most
	}{
		{name: "page links to itself", next: func(p string) string { return "?page=" + p }, wantMost: 3},
		{name: "page 2 links back to page 1", next: func(p string) string {
			if p == "2" {
				return "?page=1"
			}
			return "?page=2"
		}, wantMost: 4},
		{name: "cycle of three", next: func(p string) string {
			switch p {
			case "", "1":
				return "?page=2"
			case "2":
				return "?page=3"
			}
			return "?page=1"
		}, wantMost: 5},
		{name: "first page by its bare path", next: func(p string) string {
			if p == "" {
				return "?page=2"
			}
			return ""
		}, wantMost: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := testreg.StartOCI(t, testreg.OCIOptions{})
			reg.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.HasSuffix(r.URL.Path, "/tags/list") {
					return false
				}
				p := r.URL.Query().Get("page")
				if next := tt.next(p); next != "" {
					w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, r.URL.Path, next))
				} else {
					w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, r.URL.Path))
				}
				_ = json.NewEncoder(w).Encode(map[string]any{"name": "team/loop", "tags": []string{"1.0." + p, "2.0." + p}})
				return true
			})
			c := &Client{Hosts: fastHosts}
			_, err := c.ListTags(t.Context(), repoOf(t, reg, "team/loop"))
			if !errors.Is(err, ErrTagListLoop) || !strings.Contains(err.Error(), "listing tags of "+reg.Host()+"/team/loop") {
				t.Fatalf("err = %v, want ErrTagListLoop naming the repository", err)
			}
			if got := reg.Count("list", "team/loop"); got > tt.wantMost {
				t.Errorf("%d list requests before the loop was noticed, want at most %d", got, tt.wantMost)
			}
		})
	}
}
