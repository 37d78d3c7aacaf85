package imageref

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	const dgst = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		in       string
		wantRepo string
		wantTag  string
		wantDig  string
		wantStr  string
		wantErr  bool
	}{
		{in: "nginx", wantRepo: "docker.io/library/nginx", wantTag: "latest", wantStr: "docker.io/library/nginx:latest"},
		{in: "nginx:1.25", wantRepo: "docker.io/library/nginx", wantTag: "1.25", wantStr: "docker.io/library/nginx:1.25"},
		{in: "bitnami/redis:7", wantRepo: "docker.io/bitnami/redis", wantTag: "7", wantStr: "docker.io/bitnami/redis:7"},
		{in: "index.docker.io/library/nginx", wantRepo: "docker.io/library/nginx", wantTag: "latest", wantStr: "docker.io/library/nginx:latest"},
		{in: "ghcr.io/org/team/app:v1.2.3", wantRepo: "ghcr.io/org/team/app", wantTag: "v1.2.3", wantStr: "ghcr.io/org/team/app:v1.2.3"},
		{in: "localhost:5000/app", wantRepo: "localhost:5000/app", wantTag: "latest", wantStr: "localhost:5000/app:latest"},
		{in: "127.0.0.1:5000/a/b/c:1.0", wantRepo: "127.0.0.1:5000/a/b/c", wantTag: "1.0", wantStr: "127.0.0.1:5000/a/b/c:1.0"},
		{in: "registry.example.com:443/app@" + dgst, wantRepo: "registry.example.com:443/app", wantDig: dgst, wantStr: "registry.example.com:443/app@" + dgst},
		{in: "app:1.0@" + dgst, wantRepo: "docker.io/library/app", wantTag: "1.0", wantDig: dgst, wantStr: "docker.io/library/app:1.0@" + dgst},
		{in: "", wantErr: true},
		{in: " nginx", wantErr: true},
		// 246 characters, 254 with Docker Hub's library/: accepted.
		{in: strings.Repeat("a", 246), wantRepo: "docker.io/library/" + strings.Repeat("a", 246), wantTag: "latest", wantStr: "docker.io/library/" + strings.Repeat("a", 246) + ":latest"},
		// 248 characters, 256 with library/: its canonical form would not parse (found by FuzzParse).
		{in: strings.Repeat("0", 248), wantErr: true},
		{in: "Nginx", wantErr: true},
		{in: "nginx:bad tag", wantErr: true},
		{in: "nginx:", wantErr: true},
		{in: "host:5000/app:", wantErr: true},
		{in: "nginx:@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", wantErr: true},
		{in: "nginx@sha256:short", wantErr: true},
		{in: "host:5000/", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			img, err := Parse(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			got := []string{img.Repo(), img.Tag, img.Digest, img.String()}
			want := []string{tt.wantRepo, tt.wantTag, tt.wantDig, tt.wantStr}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"nginx", "a/b:c", "h:1/x@sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "localhost:5000/x:y", ":", "@", "a:b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		img, err := Parse(s)
		if err != nil {
			return
		}
		// A parsed reference round-trips through its canonical form.
		again, err := Parse(img.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", img.String(), s, err)
		}
		if again.String() != img.String() {
			t.Fatalf("round trip of %q: %q != %q", s, again.String(), img.String())
		}
	})
}

// A reference with control characters is refused in one line: the
// parser's message repeats the input, and errors name their field per line.
func TestParseErrorKeepsToOneLine(t *testing.T) {
	_, err := Parse("0\n0")
	if err == nil {
		t.Fatal("parsed a reference with a newline")
	}
	if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || !strings.Contains(msg, `0\n0`) {
		t.Errorf("error %q: want one line naming the input escaped", msg)
	}
}
