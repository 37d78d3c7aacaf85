package pipeline_test

import (
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
	"github.com/crowsnest-dev/crowsnest/notify/pipeline"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// `config validate` accepts triggers and templates that call Argo CD's
// repo helpers.
func TestCommitMetadataConfigValidates(t *testing.T) {
	cfg := testnotify.Config("http://127.0.0.1:1")
	cfg.Notifications.Catalog = false
	cfg.Notifications.Triggers = map[string][]config.Condition{"on-commit": {{
		When: "repo.GetCommitMetadata(app.status.sync.revision).Author != '' && repo.GetAppDetails().Type == 'Helm'", Send: []string{"commit"},
	}}}
	cfg.Notifications.Templates = map[string]config.Template{"commit": {
		Message: `Author: {{(call .repo.GetCommitMetadata .app.status.sync.revision).Author}} {{(call .repo.GetAppDetails).Helm.GetParameterValueByName "image.tag"}}`,
	}}
	if err := pipeline.Check(&cfg.Notifications); err != nil {
		t.Fatal(err)
	}
}

// A Git server that never answers fails the call when Timeout passes
// (the writer's own per-operation bound is far longer here).
func TestCommitMetadataBoundedTime(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	w := &gitwb.Writer{CacheDir: filepath.Join(t.TempDir(), "cache"), Timeout: 10 * time.Minute, Metrics: gitwb.NewMetrics(prometheus.NewRegistry())}
	r := &pipeline.Repo{Git: w, Timeout: 300 * time.Millisecond}
	url := "http://" + ln.Addr().String() + "/apps.git"
	sha := "0123456789abcdef0123456789abcdef01234567"
	_, err = r.CommitMetadata(t.Context(), testnotify.AppObject("stuck", url, sha), sha)
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("err = %v, want the deadline", err)
	}
}
