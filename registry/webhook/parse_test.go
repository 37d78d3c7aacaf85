package webhook

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readTestdata(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func TestParseTestdata(t *testing.T) {
	const (
		ghcrDigest   = "sha256:4a1c7f5e0e6e9d5b1f2b7f0c3c9a8f6e5d4c3b2a19f8e7d6c5b4a39281706f5e"
		harborDigest = "sha256:2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70819"
		distDigest   = "sha256:5e6f7081920a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4"
	)
	tests := []struct {
		name     string
		src      Source
		event    string // X-GitHub-Event
		file     string
		want     []PushEvent
		wantErr  bool
		registry string
	}{
		{name: "dockerhub", src: Source{Type: DockerHub}, file: "dockerhub.json", want: []PushEvent{
			{Source: DockerHub, Repository: "docker.io/crowsnestdev/demo-app", Tags: []string{"v1.4.2"}},
		}},
		{name: "ghcr package event", src: Source{Type: GHCR}, event: "package", file: "ghcr_package.json", want: []PushEvent{
			{Source: GHCR, Repository: "ghcr.io/crowsnest-dev/demo-app", Tags: []string{"v2.0.1"}, Digest: ghcrDigest},
		}},
		{name: "ghcr registry_package without url or tag", src: Source{Type: GHCR}, event: "registry_package", file: "ghcr_registry_package.json", want: []PushEvent{
			{Source: GHCR, Repository: "ghcr.io/crowsnest-dev/tools/scanner", Digest: "sha256:9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807f6e5d4c3b2a1908f7e6d5c4b"},
		}},
		{name: "ghcr npm package ignored", src: Source{Type: GHCR}, event: "package", file: "ghcr_npm.json"},
		{name: "ghcr ping ignored", src: Source{Type: GHCR}, event: "ping", file: "ghcr_package.json"},
		{name: "harbor default", src: Source{Type: Harbor}, file: "harbor.json", want: []PushEvent{
			{Source: Harbor, Repository: "harbor.example.com/platform/nginx", Tags: []string{"1.27.3"}, Digest: "sha256:1f0e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"},
		}},
		{name: "harbor cloudevents, two tags", src: Source{Type: Harbor}, file: "harbor_cloudevents.json", want: []PushEvent{
			{Source: Harbor, Repository: "harbor.example.com:8443/team-a/api", Tags: []string{"stable", "v3"}, Digest: harborDigest},
		}},
		{name: "harbor registry override", src: Source{Type: Harbor, Registry: "registry.corp:443"}, file: "harbor.json", want: []PushEvent{
			{Source: Harbor, Repository: "registry.corp:443/platform/nginx", Tags: []string{"1.27.3"}, Digest: "sha256:1f0e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"},
		}},
		{name: "harbor pull ignored", src: Source{Type: Harbor}, file: "harbor_pull.json"},
		{name: "quay", src: Source{Type: Quay}, file: "quay.json", want: []PushEvent{
			{Source: Quay, Repository: "quay.io/acme/worker", Tags: []string{"2026.01.05", "latest"}},
		}},
		{name: "quay legacy tag map, own host", src: Source{Type: Quay}, file: "quay_legacy.json", want: []PushEvent{
			{Source: Quay, Repository: "registry.acme.internal/acme/worker", Tags: []string{"latest", "v7"}},
		}},
		{name: "quay build event ignored", src: Source{Type: Quay}, file: "quay_build.json"},
		{name: "distribution push, blob and untagged skipped", src: Source{Type: Distribution}, file: "distribution_push.json", want: []PushEvent{
			{Source: Distribution, Repository: "registry.internal:5000/team/app", Tags: []string{"latest", "v0.9.0"}, Digest: distDigest},
		}},
		{name: "distribution registry override", src: Source{Type: Distribution, Registry: "registry.example.com"}, file: "distribution_push.json", want: []PushEvent{
			{Source: Distribution, Repository: "registry.example.com/team/app", Tags: []string{"latest", "v0.9.0"}, Digest: distDigest},
		}},
		{name: "distribution pull ignored", src: Source{Type: Distribution}, file: "distribution_pull.json"},
		{name: "generic", src: Source{Type: Generic}, file: "generic.json", want: []PushEvent{
			{Source: Generic, Repository: "registry.example.com:5000/payments/api", Tags: []string{"v5.2.0"}, Digest: "sha256:c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"},
		}},
		{name: "dockerhub payload sent to the generic source", src: Source{Type: Generic}, file: "dockerhub.json", wantErr: true},
		{name: "generic payload sent to harbor", src: Source{Type: Harbor}, file: "generic.json", wantErr: true},
		{name: "generic payload sent to distribution", src: Source{Type: Distribution}, file: "generic.json", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.event != "" {
				h.Set("X-GitHub-Event", tt.event)
			}
			got, err := parse(&tt.src, h, readTestdata(t, tt.file))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parse error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrBadPayload) {
				t.Errorf("error %v does not wrap ErrBadPayload", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseInline(t *testing.T) {
	tests := []struct {
		name    string
		src     Source
		body    string
		want    []PushEvent
		wantErr string
	}{
		{name: "truncated JSON", src: Source{Type: Generic}, body: `{"repository": "a/b"`,
			wantErr: "invalid webhook payload: generic: decoding JSON: unexpected end of JSON input"},
		{name: "not JSON", src: Source{Type: Quay}, body: `repository=a`,
			wantErr: "invalid webhook payload: quay: decoding JSON: invalid character 'r' looking for beginning of value"},
		{name: "wrong field type", src: Source{Type: DockerHub}, body: `{"repository": {"repo_name": 7}}`,
			wantErr: "invalid webhook payload: dockerhub: decoding JSON: json: cannot unmarshal number into Go struct field .repository.repo_name of type string"},
		{name: "missing repository", src: Source{Type: DockerHub}, body: `{"push_data": {"tag": "v1"}}`,
			wantErr: "invalid webhook payload: dockerhub: repository.repo_name is missing"},
		{name: "upper-case repository", src: Source{Type: Generic}, body: `{"repository": "example.com/Team/App"}`,
			wantErr: `invalid webhook payload: generic: repository "example.com/Team/App": invalid image reference "example.com/Team/App": repository can only contain the characters ` + "`abcdefghijklmnopqrstuvwxyz0123456789_-./`" + `: Team/App`},
		{name: "invalid tag", src: Source{Type: Generic}, body: `{"repository": "example.com/app", "tag": "-bad"}`,
			wantErr: `invalid webhook payload: generic: invalid tag "-bad"`},
		{name: "invalid digest", src: Source{Type: Generic}, body: `{"repository": "example.com/app", "digest": "sha256:zz"}`,
			wantErr: `invalid webhook payload: generic: invalid digest "sha256:zz": `},
		{name: "harbor without host needs registry", src: Source{Type: Harbor}, body: `{"type": "PUSH_ARTIFACT", "event_data": {"repository": {"repo_full_name": "lib/app"}}}`,
			wantErr: `invalid webhook payload: harbor: repository "lib/app": the payload names no registry host; set the source's registry`},
		{name: "harbor without host, registry set", src: Source{Type: Harbor, Registry: "harbor.local"},
			body: `{"type": "PUSH_ARTIFACT", "event_data": {"repository": {"repo_full_name": "lib/app"}}}`,
			want: []PushEvent{{Source: Harbor, Repository: "harbor.local/lib/app"}}},
		{name: "docker hub official image name", src: Source{Type: DockerHub}, body: `{"repository": {"repo_name": "nginx"}, "push_data": {"tag": "1.27"}}`,
			want: []PushEvent{{Source: DockerHub, Repository: "docker.io/library/nginx", Tags: []string{"1.27"}}}},
		{name: "generic hostless means docker hub", src: Source{Type: Generic}, body: `{"repository": "index.docker.io/team/app", "tags": ["a", "b", "a"]}`,
			want: []PushEvent{{Source: Generic, Repository: "docker.io/team/app", Tags: []string{"a", "b"}}}},
		{name: "distribution events missing", src: Source{Type: Distribution}, body: `{}`,
			wantErr: "invalid webhook payload: distribution: events is missing"},
		{name: "distribution empty envelope", src: Source{Type: Distribution}, body: `{"events": []}`},
		{name: "distribution host from target url", src: Source{Type: Distribution},
			body: `{"events": [{"action": "push", "target": {"repository": "a/b", "tag": "t", "url": "http://reg:5000/v2/a/b/manifests/t"}}]}`,
			want: []PushEvent{{Source: Distribution, Repository: "reg:5000/a/b", Tags: []string{"t"}}}},
		{name: "distribution two repositories", src: Source{Type: Distribution},
			body: `{"events": [{"action": "push", "target": {"repository": "a/b", "tag": "1"}, "request": {"host": "r:1"}},
				{"action": "push", "target": {"repository": "c", "tag": "2"}, "request": {"host": "r:1"}}]}`,
			want: []PushEvent{
				{Source: Distribution, Repository: "r:1/a/b", Tags: []string{"1"}},
				{Source: Distribution, Repository: "r:1/c", Tags: []string{"2"}},
			}},
		{name: "github action deleted ignored", src: Source{Type: GHCR}, body: `{"action": "deleted", "package": {"package_type": "CONTAINER", "name": "x", "namespace": "o"}}`},
		{name: "github neither package", src: Source{Type: GHCR}, body: `{"action": "published"}`,
			wantErr: "invalid webhook payload: ghcr: neither package nor registry_package is present"},
		{name: "quay bad updated_tags", src: Source{Type: Quay}, body: `{"docker_url": "quay.io/a/b", "updated_tags": 3}`,
			wantErr: "invalid webhook payload: quay: updated_tags is neither a list nor an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(&tt.src, http.Header{}, []byte(tt.body))
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
				if len(gotErr) > len(tt.wantErr) && tt.wantErr != "" && tt.wantErr[len(tt.wantErr)-1] == ' ' {
					gotErr = gotErr[:len(tt.wantErr)] // only the stable prefix of a library message
				}
			}
			if diff := cmp.Diff(tt.wantErr, gotErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
