package repourl

import (
	"strings"
	"testing"
)

func TestToHTTPSAndFullName(t *testing.T) {
	tests := []struct{ in, want, full string }{
		{"git@github.com:org/repo.git", "https://github.com/org/repo", "org/repo"},
		{"github.com:org/repo", "https://github.com/org/repo", "org/repo"},
		{"ssh://git@gitlab.com/group/sub/repo.git", "https://gitlab.com/group/sub/repo", "group/sub/repo"},
		{"https://user:pw@github.com/org/repo.git", "https://github.com/org/repo", "org/repo"},
		{"https://git.example.com:8443/org/repo", "https://git.example.com:8443/org/repo", "org/repo"},
		{"deploy:t0ken@git.example.com:org/repo.git", "https://git.example.com/org/repo", "org/repo"},
		{"not a url", "not a url", ""},
		// Unreadable, shown masked.
		{"deploy:t0ken@git.example.com/org/repo", "***@git.example.com/org/repo", ""},
		{"https://user:t0ken@bad host/x", "https://***@bad host/x", ""},
	}
	for _, tt := range tests {
		if got := ToHTTPS(tt.in); got != tt.want {
			t.Errorf("ToHTTPS(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := FullName(tt.in); got != tt.full {
			t.Errorf("FullName(%q) = %q, want %q", tt.in, got, tt.full)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want URL
		ok   bool
	}{
		{"https://user:pw@git.example.com:8443/org/repo.git", URL{Scheme: "https", Host: "git.example.com:8443", Path: "org/repo"}, true},
		{"HTTP://git.example.com/org/repo", URL{Scheme: "http", Host: "git.example.com", Path: "org/repo"}, true},
		{"ssh://git@git.example.com:7999/prj/repo.git", URL{Scheme: "ssh", Host: "git.example.com", Path: "prj/repo"}, true},
		{"git@ssh.dev.azure.com:v3/org/My%20Project/repo", URL{Scheme: "ssh", Host: "ssh.dev.azure.com", Path: "v3/org/My Project/repo"}, true},
		{"https://dev.azure.com/org/My%20Project/_git/repo", URL{Scheme: "https", Host: "dev.azure.com", Path: "org/My Project/_git/repo"}, true},
		{"git://git.example.com/org/repo", URL{Scheme: "git", Host: "git.example.com", Path: "org/repo"}, true},
		{"not a url", URL{}, false},
		{"https://git.example.com/", URL{}, false},
	}
	for _, tt := range tests {
		got, ok := Parse(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSegments(t *testing.T) {
	tests := []struct {
		path string
		want []string
		ok   bool
	}{
		{"org/repo", []string{"org", "repo"}, true},
		{"org/My Project/_git/repo", []string{"org", "My Project", "_git", "repo"}, true},
		{"org/../repo", nil, false},
		{"./repo", nil, false},
		{"org//repo", nil, false},
	}
	for _, tt := range tests {
		got, ok := URL{Path: tt.path}.Segments()
		if ok != tt.ok || strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("Segments(%q) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
}
