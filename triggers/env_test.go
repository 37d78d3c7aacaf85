package triggers

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRepoHelpers(t *testing.T) {
	tests := []struct {
		in, https, fullName string
	}{
		{"git@github.com:example/shop-deploy.git", "https://github.com/example/shop-deploy", "example/shop-deploy"},
		{"ssh://git@gitlab.example.com:2222/group/sub/app.git", "https://gitlab.example.com/group/sub/app", "group/sub/app"},
		{"https://github.com/example/shop.git/", "https://github.com/example/shop", "example/shop"},
		{"http://git.local:3000/team/app", "https://git.local:3000/team/app", "team/app"},
		{"oci://registry.example.com/charts", "https://registry.example.com/charts", "charts"},
		{"not a url", "not a url", ""},
		{"https://github.com", "https://github.com", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := []string{RepoFuncs{}.RepoURLToHTTPS(tt.in), RepoFuncs{}.FullNameByRepoURL(tt.in)}
			if diff := cmp.Diff([]string{tt.https, tt.fullName}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestEventMap(t *testing.T) {
	ev := &Event{Type: EventImageUpdateHeld, ID: "e1", Image: "ghcr.io/x/y", To: "1.2.3", Window: "weekend freeze",
		Time: time.Date(2026, 11, 21, 12, 0, 0, 0, time.FixedZone("CET", 3600))}
	want := map[string]any{"type": "image-update-held", "id": "e1", "image": "ghcr.io/x/y", "to": "1.2.3",
		"window": "weekend freeze", "time": "2026-11-21T11:00:00Z", "from": "", "reason": "", "message": "", "commit": "",
		"pullRequest": "", "pullRequestNumber": 0}
	if diff := cmp.Diff(want, ev.Map()); diff != "" {
		t.Errorf("event map (-want +got):\n%s", diff)
	}
}

func TestTimeHelpers(t *testing.T) {
	if got := (TimeFuncs{now: fixedNow}).Now(); !got.Equal(fixedNow) {
		t.Errorf("pinned Now() = %v", got)
	}
	if (TimeFuncs{}).Now().IsZero() {
		t.Error("unpinned Now() is zero")
	}
	for _, in := range []any{nil, "", "yesterday", 42} {
		if _, err := (TimeFuncs{}).Parse(in); err == nil {
			t.Errorf("Parse(%v) succeeded", in)
		}
	}
}
