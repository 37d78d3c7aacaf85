package testgit

import (
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// HTTPBackend is where Debian's git package installs the smart-HTTP CGI
// program.
const HTTPBackend = "/usr/lib/git-core/git-http-backend"

// Kind classifies a request to the server.
type Kind string

// Request kinds: ref advertisement (GET info/refs, for either service),
// fetch/clone negotiation (POST git-upload-pack) and push (POST
// git-receive-pack).
const (
	KindInfoRefs    Kind = "info/refs"
	KindUploadPack  Kind = "upload-pack"
	KindReceivePack Kind = "receive-pack"
	KindOther       Kind = "other"
)

// Outage modes for SetDown: answer 503, or drop the connection without a
// response (what a client sees as a reset or EOF).
const (
	Down503 = iota
	DownDrop
)

// Options configures Start. With Password or Accounts set the server demands HTTP
// basic auth; an empty Username accepts any user name with that password,
// the way forges accept a token.
type Options struct {
	Username string
	Password string
	// Accounts are more user names with their passwords the server
	// accepts, each only with its own password (two teams' tokens).
	Accounts map[string]string
}

// Push is one push the server took: who authenticated it and where the
// repository's branches pointed once it was done.
type Push struct {
	// User is the basic-auth user name the push was sent with ("" for
	// none).
	User string
	// Heads are the repository's branches after the push, "branch sha",
	// sorted.
	Heads []string
}

// Server is a Git smart-HTTP server over bare repositories.
type Server struct {
	// URL is the base URL; a repository is at URL + "/" + name + ".git".
	URL  string
	Root string

	srv  *httptest.Server
	cgi  *cgi.Handler
	opts Options

	mu          sync.Mutex
	counts      map[Kind]int
	rejectPush  int
	downUntil   time.Time
	downMode    int
	authFailure bool
	beforePush  func()
	dropPushAck int
	pushes      []Push
}

// Start serves bare repositories from a fresh temporary directory until
// the test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	if _, err := os.Stat(HTTPBackend); err != nil {
		tb.Skipf("git http-backend not installed: %v", err)
	}
	s := &Server{Root: tb.TempDir(), opts: opts, counts: map[Kind]int{}}
	s.cgi = &cgi.Handler{
		Path: HTTPBackend,
		Dir:  s.Root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.Root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
			"HOME=" + s.Root,
		},
		Stderr: nopWriter{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(s.srv.Close)
	return s
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// RepoURL is the clone URL of the named repository.
func (s *Server) RepoURL(name string) string { return s.URL + "/" + name + ".git" }

// Count returns how many requests of a kind the server has seen.
func (s *Server) Count(k Kind) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[k]
}

// ResetCounts forgets the request counts.
func (s *Server) ResetCounts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts = map[Kind]int{}
}

// RejectPushes makes the next n pushes (receive-pack POSTs) fail with 500
// before git sees them.
func (s *Server) RejectPushes(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectPush = n
}

// SetDown makes the server unavailable for d from now: every request is
// answered 503 (Down503) or its connection is dropped (DownDrop).
func (s *Server) SetDown(d time.Duration, mode int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.downUntil = time.Now().Add(d)
	s.downMode = mode
}

// SetAuthFailure makes the server refuse every credential while on.
func (s *Server) SetAuthFailure(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authFailure = on
}

// DropPushAcks makes the next n pushes land and then drops their
// connections before the answer: git has moved the branch, the client
// sees a reset and cannot know its push succeeded.
func (s *Server) DropPushAcks(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropPushAck = n
}

// BeforePush installs f to run (once) just before the next push reaches
// git, after the client has read the refs: a commit made there races the
// push, the way a concurrent pusher does. nil removes it.
func (s *Server) BeforePush(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beforePush = f
}

func kindOf(r *http.Request) Kind {
	switch {
	case strings.HasSuffix(r.URL.Path, "/info/refs"):
		return KindInfoRefs
	case strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
		return KindUploadPack
	case strings.HasSuffix(r.URL.Path, "/git-receive-pack"):
		return KindReceivePack
	default:
		return KindOther
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	kind := kindOf(r)
	s.mu.Lock()
	s.counts[kind]++
	down := time.Now().Before(s.downUntil)
	mode := s.downMode
	authFailure := s.authFailure
	var hook func()
	reject, dropAck := false, false
	if kind == KindReceivePack && !down {
		if s.rejectPush > 0 {
			s.rejectPush--
			reject = true
		} else {
			hook, s.beforePush = s.beforePush, nil
			if s.dropPushAck > 0 && !authFailure && s.authorized(r) {
				s.dropPushAck--
				dropAck = true
			}
		}
	}
	s.mu.Unlock()

	if down {
		if mode == DownDrop {
			dropConn(w)
			return
		}
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	if authFailure || !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="testgit"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	if reject {
		http.Error(w, "push rejected by test", http.StatusInternalServerError)
		return
	}
	if hook != nil {
		hook()
	}
	if dropAck {
		s.cgi.ServeHTTP(httptest.NewRecorder(), r) // the push lands; its answer goes nowhere
		dropConn(w)
		return
	}
	if kind != KindReceivePack || r.Method != http.MethodPost {
		s.cgi.ServeHTTP(w, r)
		return
	}
	rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.cgi.ServeHTTP(rec, r)
	if rec.status == http.StatusOK {
		s.recordPush(r)
	}
}

// statusWriter keeps the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// recordPush notes who pushed and where the pushed repository's branches
// are now.
func (s *Server) recordPush(r *http.Request) {
	user, _, _ := r.BasicAuth()
	repo := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/git-receive-pack")
	out, _ := s.cmd(filepath.Join(s.Root, repo), nil, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/").Output()
	var heads []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if line != "" {
			heads = append(heads, line)
		}
	}
	slices.Sort(heads)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pushes = append(s.pushes, Push{User: user, Heads: heads})
}

// Pushes lists the pushes the server took, in order.
func (s *Server) Pushes() []Push {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pushes)
}

// dropConn closes the request's connection with a reset, answering
// nothing; without a hijackable connection it answers 503.
func dropConn(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
			return
		}
	}
	http.Error(w, "service unavailable", http.StatusServiceUnavailable)
}

func (s *Server) authorized(r *http.Request) bool {
	if s.opts.Password == "" && len(s.opts.Accounts) == 0 {
		return true
	}
	u, p, ok := r.BasicAuth()
	if !ok {
		return false
	}
	if want, isAccount := s.opts.Accounts[u]; isAccount {
		return p == want
	}
	return s.opts.Password != "" && p == s.opts.Password && (s.opts.Username == "" || u == s.opts.Username)
}

// repoDir is the bare repository's directory.
func (s *Server) repoDir(name string) string { return filepath.Join(s.Root, name+".git") }
