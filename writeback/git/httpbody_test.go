package git

import (
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A Git server that answers with an error status and a 100 MiB body gets
// its status reported and a bounded part of its body read: go-git read
// the whole body into its error. Counted as the bytes the server managed
// to write before the connection was closed; loopback socket buffers
// take a few MiB of them without being read.
func TestRemoteErrorBodyIsBounded(t *testing.T) {
	const bodySize = 100 << 20
	const maxWritten = 16 << 20
	tests := []struct {
		name     string
		status   int
		tls      bool
		wantText string
	}{
		{name: "403", status: http.StatusForbidden, wantText: "authorization failed (HTTP 403)"},
		{name: "500", status: http.StatusInternalServerError, wantText: "status code: 500"},
		{name: "403 over HTTPS with the host's CA", status: http.StatusForbidden, tls: true, wantText: "authorization failed (HTTP 403)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var written atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				chunk := []byte(strings.Repeat(remoteMarker+"\n", 64<<10/(len(remoteMarker)+1)))
				for written.Load() < bodySize {
					n, err := w.Write(chunk)
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			})
			srv := httptest.NewUnstartedServer(h)
			w := newWriter(t, nil)
			w.MaxAttempts = 1
			if tt.tls {
				srv.StartTLS()
				ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
				w.TLS = map[string]TLS{strings.TrimPrefix(srv.URL, "https://"): {CABundle: ca}}
			} else {
				srv.Start()
			}
			res, err := w.Apply(t.Context(), []Change{kustomizeWeb(srv.URL+"/apps.git", "1.2.0")})
			srv.Close() // waits for the handler
			if err == nil || len(res) != 1 || res[0].Err == nil {
				t.Fatalf("Apply: %v, %+v; want a failure", err, res)
			}
			if !strings.Contains(err.Error(), tt.wantText) || strings.Contains(err.Error(), remoteMarker) {
				t.Errorf("error %q: want %q and not the body", err, tt.wantText)
			}
			t.Logf("the server wrote %d KiB of its %d MiB body", written.Load()>>10, bodySize>>20)
			if n := written.Load(); n > maxWritten {
				t.Errorf("the server wrote %d MiB of its body: it was read past %d KiB", n>>20, maxErrorBody>>10)
			}
		})
	}
}

// A server whose list of refs goes on (here 50 MiB, against a limit
// lowered to 1 MiB) fails the write with ErrRefsTooLarge, once, after a
// bounded part of it was read: go-git read it whole into memory.
func TestRefAdvertisementIsBounded(t *testing.T) {
	const bodySize = 50 << 20
	const maxWritten = 16 << 20
	old := maxAdvertisement
	maxAdvertisement = 1 << 20
	t.Cleanup(func() { maxAdvertisement = old })
	pkt := func(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }
	var written, hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		head := pkt("# service=git-upload-pack\n") + "0000" + pkt(strings.Repeat("a", 40)+" HEAD\x00multi_ack\n")
		n, err := io.WriteString(w, head)
		written.Add(int64(n))
		for i := 0; err == nil && written.Load() < bodySize; i++ {
			n, err = io.WriteString(w, pkt(fmt.Sprintf("%s refs/heads/b%d\n", strings.Repeat("a", 40), i)))
			written.Add(int64(n))
		}
	}))
	w := newWriter(t, nil)
	w.MaxAttempts = 3
	_, err := w.Apply(t.Context(), []Change{kustomizeWeb(srv.URL+"/apps.git", "1.2.0")})
	srv.Close() // waits for the handler
	if !errors.Is(err, ErrRefsTooLarge) {
		t.Fatalf("Apply: %v; want ErrRefsTooLarge", err)
	}
	t.Logf("%d requests; the server wrote %d KiB of its %d MiB list", hits.Load(), written.Load()>>10, bodySize>>20)
	if n := hits.Load(); n != 1 {
		t.Errorf("%d requests: the same answer was asked for again", n)
	}
	if n := written.Load(); n > maxWritten {
		t.Errorf("the server wrote %d MiB of its list: it was read past the limit", n>>20)
	}
}
