package faults

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// registryFaultFor is how long each registry fault lasts: longer than the
// registry client's own retries (4 attempts, 0.5s to 2s apart), so a
// reconcile's selection fails and crowsnest must come back to it.
const registryFaultFor = 8 * time.Second

// registryFault answers a request the broken way; it reports whether it
// did (false lets the registry serve it).
type registryFault func(w http.ResponseWriter, r *http.Request, n int64) bool

// Every registry failure mode of the issue, each its own scenario.
var registryFaults = []struct {
	name, desc string
	fault      registryFault
}{
	{"registry 429 Retry-After", "429 with Retry-After: 2", func(w http.ResponseWriter, _ *http.Request, _ int64) bool {
		w.Header().Set("Retry-After", "2")
		http.Error(w, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`, http.StatusTooManyRequests)
		return true
	}},
	{"registry 500/503", "500 and 503 in turn", func(w http.ResponseWriter, _ *http.Request, n int64) bool {
		code := http.StatusInternalServerError
		if n%2 == 0 {
			code = http.StatusServiceUnavailable
		}
		http.Error(w, "registry failing", code)
		return true
	}},
	{"registry timeout", "request held without an answer", func(w http.ResponseWriter, r *http.Request, _ int64) bool {
		select {
		case <-r.Context().Done():
		case <-time.After(registryFaultFor + 5*time.Second):
			http.Error(w, "registry was hanging", http.StatusServiceUnavailable)
		}
		return true
	}},
	{"registry connection reset", "connection reset (RST) before any answer", func(w http.ResponseWriter, _ *http.Request, _ int64) bool {
		return resetConn(w)
	}},
	{"registry truncated body", "tag lists and manifests cut off mid-body", func(w http.ResponseWriter, r *http.Request, _ int64) bool {
		if r.Method != http.MethodGet || r.URL.Path == "/v2/" {
			return false
		}
		return truncate(w, r)
	}},
}

// Each registry failure mode in turn, two at a time (they spend most of
// their time waiting).
func TestRegistryFaults(t *testing.T) {
	for _, rf := range registryFaults {
		t.Run(rf.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, "reg", worldOptions{kubeApps: 4, gitApps: 4, repos: 2})
			start := time.Now()
			var injected atomic.Int64
			w.reg.SetFault(func(rw http.ResponseWriter, r *http.Request) bool {
				if time.Since(start) > registryFaultFor {
					return false
				}
				n := injected.Add(1)
				if !rf.fault(rw, r, n) {
					injected.Add(-1)
					return false
				}
				return true
			})
			d := w.daemon(t, "crowsnest")
			d.start(t)
			finish(t, w, start, rf.name, func() string {
				return fmt.Sprintf("registry: %s for the first %s (%d requests)", rf.desc, registryFaultFor, injected.Load())
			}, 0, d)
			if injected.Load() == 0 {
				t.Errorf("no fault was injected: the scenario tested nothing")
			}
		})
	}
}

// resetConn drops the connection with a TCP reset.
func resetConn(w http.ResponseWriter) bool {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
	return true
}

// truncate answers 200 with a Content-Length far beyond the bytes that
// follow, then closes the connection: the body ends early.
func truncate(w http.ResponseWriter, r *http.Request) bool {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	defer conn.Close()
	body := `{"name":"team/svc-00","tags":["1.0.0","1.`
	ctype := "application/json"
	if strings.Contains(r.URL.Path, "/manifests/") {
		body = `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","size":`
		ctype = "application/vnd.oci.image.manifest.v1+json"
	}
	_, _ = fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nDocker-Content-Digest: sha256:%064d\r\nContent-Length: %d\r\n\r\n%s",
		ctype, 0, len(body)+500, body)
	_ = buf.Flush()
	return true
}
