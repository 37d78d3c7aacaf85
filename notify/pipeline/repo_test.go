package pipeline_test

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/testgit"
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

// GetAppDetails reads at most 32 value files, and 4 MiB of files
// together: the Application's author lists the files and writes them.
// Past either, the call fails naming the limit (the render fails), and
// a list over the count is refused before Git is asked.
func TestAppDetailsBounded(t *testing.T) {
	s := testgit.Start(t, testgit.Options{})
	url := s.CreateRepo(t, "apps")
	files := map[string]string{"guestbook/Chart.yaml": "name: guestbook\n", "guestbook/values.yaml": "image:\n  tag: v1\n"}
	big := strings.Repeat("# padding\n", 100_000) // 1,000,000 bytes, under the 1 MiB a file may hold
	for i := range 5 {
		files[fmt.Sprintf("guestbook/big%d.yaml", i)] = big
	}
	for i := range 33 {
		files[fmt.Sprintf("guestbook/v%d.yaml", i)] = fmt.Sprintf("v%d: x\n", i)
	}
	sha := s.Seed(t, "apps", "main", files, "values")
	names := func(format string, n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = fmt.Sprintf(format, i)
		}
		return out
	}
	tests := []struct {
		name       string
		valueFiles []any
		wantErr    string
	}{
		{name: "32 value files", valueFiles: names("v%d.yaml", 32)},
		{name: "33 value files", valueFiles: names("v%d.yaml", 33),
			wantErr: "helm.valueFiles: 33 files in the repository, more than the 32 GetAppDetails reads"},
		{name: "5 MB of value files", valueFiles: names("big%d.yaml", 5),
			wantErr: "/guestbook/big4.yaml: the files read come to over the 4194304-byte limit together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &gitwb.Writer{CacheDir: filepath.Join(t.TempDir(), "cache"), Metrics: gitwb.NewMetrics(prometheus.NewRegistry())}
			r := &pipeline.Repo{Git: w}
			app := testnotify.AppObject("web", url, sha)
			source := app["spec"].(map[string]any)["source"].(map[string]any)
			source["targetRevision"] = sha
			source["helm"].(map[string]any)["valueFiles"] = tt.valueFiles
			d, err := r.AppDetails(t.Context(), app)
			got := ""
			if err != nil {
				got = err.Error()
			} else if d.Type != "Helm" {
				t.Errorf("type %q, want Helm", d.Type)
			}
			if diff := cmp.Diff(tt.wantErr, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}
