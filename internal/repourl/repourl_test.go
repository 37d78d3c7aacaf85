package repourl

import "testing"

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
