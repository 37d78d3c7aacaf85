package main

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
)

// Kinds of request crowsnest makes to a forge (Gitea), as the forge
// receives them: its pull-request API calls, and Git over HTTP.
const (
	forgeListPulls  = "list open pull requests" // GET .../pulls (finding the open one)
	forgeGetPull    = "get pull request"        // GET .../pulls/N (following it)
	forgeOpenPull   = "open pull request"       // POST .../pulls
	forgeEditPull   = "edit pull request"       // PATCH .../pulls/N
	forgeOtherAPI   = "other API"
	forgeGitRefs    = "git refs"  // GET .../info/refs
	forgeGitFetch   = "git fetch" // POST .../git-upload-pack
	forgeGitPush    = "git push"  // POST .../git-receive-pack
	forgeOtherHTTP  = "other"
	forgeAPIPrefix  = "/api/v1/"
	forgePullsInfix = "/pulls"
)

// forgeProxy stands between crowsnest and Gitea and counts crowsnest's
// requests by kind, as the registry counts its own: crowsnest's repository
// URLs and forge API name the proxy's host, the harness reads Gitea
// directly. What the forge counts is held against what crowsnest's own
// crowsnest_forge_requests_total says.
type forgeProxy struct {
	srv  *httptest.Server
	host string // 127.0.0.1:PORT

	mu     sync.Mutex
	byKind map[string]int
}

func startForgeProxy(target string) (*forgeProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &forgeProxy{byKind: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := forgeKind(r)
		p.mu.Lock()
		p.byKind[kind]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	p.host = strings.TrimPrefix(p.srv.URL, "http://")
	return p, nil
}

func (p *forgeProxy) close() { p.srv.Close() }

// url is the proxy's base URL, in front of Gitea's.
func (p *forgeProxy) url() string { return p.srv.URL }

// counts returns the requests so far by kind.
func (p *forgeProxy) counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.byKind)
}

// forgeKind names the kind of a request to Gitea.
func forgeKind(r *http.Request) string {
	path := r.URL.Path
	switch {
	case strings.HasSuffix(path, "/git-receive-pack"):
		return forgeGitPush
	case strings.HasSuffix(path, "/git-upload-pack"):
		return forgeGitFetch
	case strings.HasSuffix(path, "/info/refs"):
		return forgeGitRefs
	case !strings.HasPrefix(path, forgeAPIPrefix):
		return forgeOtherHTTP
	}
	i := strings.LastIndex(path, forgePullsInfix)
	if i < 0 {
		return forgeOtherAPI
	}
	rest := path[i+len(forgePullsInfix):]
	switch {
	case rest == "" && r.Method == http.MethodGet:
		return forgeListPulls
	case rest == "" && r.Method == http.MethodPost:
		return forgeOpenPull
	case rest != "" && !strings.Contains(rest[1:], "/") && r.Method == http.MethodGet:
		return forgeGetPull
	case rest != "" && !strings.Contains(rest[1:], "/") && r.Method == http.MethodPatch:
		return forgeEditPull
	}
	return forgeOtherAPI
}

// forgeAPIKinds are the kinds that are forge API calls (what
// crowsnest_forge_requests_total counts).
var forgeAPIKinds = []string{forgeListPulls, forgeGetPull, forgeOpenPull, forgeEditPull, forgeOtherAPI}
