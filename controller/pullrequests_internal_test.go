package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// What a merged pull request announces per Application: each image from
// the base's value to the head's, whatever the commits in between.
func TestMergeProposed(t *testing.T) {
	web := func(from, to string) gitwb.Update {
		return gitwb.Update{Image: "r/web", Alias: "web", File: "web/.argocd-source-web.yaml", From: from, To: to}
	}
	api := func(from, to string) gitwb.Update {
		return gitwb.Update{Image: "r/api", Alias: "api", File: "web/.argocd-source-web.yaml", From: from, To: to}
	}
	tests := []struct {
		name           string
		carried, later []gitwb.Update
		want           []gitwb.Update
	}{
		{name: "opened", later: []gitwb.Update{web("1.0.0", "1.1.0")}, want: []gitwb.Update{web("1.0.0", "1.1.0")}},
		{name: "found open, nothing new", want: nil},
		{name: "a newer tag keeps the base's value", carried: []gitwb.Update{web("1.0.0", "1.1.0")}, later: []gitwb.Update{web("1.1.0", "1.2.0")},
			want: []gitwb.Update{web("1.0.0", "1.2.0")}},
		{name: "the base had none", carried: []gitwb.Update{web("", "1.1.0")}, later: []gitwb.Update{web("1.1.0", "1.2.0")},
			want: []gitwb.Update{web("", "1.2.0")}},
		{name: "an image the later commit left alone stays", carried: []gitwb.Update{web("1.0.0", "1.1.0"), api("2.0.0", "2.1.0")},
			later: []gitwb.Update{web("1.1.0", "1.2.0")}, want: []gitwb.Update{web("1.0.0", "1.2.0"), api("2.0.0", "2.1.0")}},
		{name: "another image joins", carried: []gitwb.Update{web("1.0.0", "1.1.0")}, later: []gitwb.Update{api("2.0.0", "2.1.0")},
			want: []gitwb.Update{web("1.0.0", "1.1.0"), api("2.0.0", "2.1.0")}},
		{name: "back to the base's value", carried: []gitwb.Update{web("1.0.0", "1.1.0"), api("2.0.0", "2.1.0")},
			later: []gitwb.Update{web("1.1.0", "1.0.0")}, want: []gitwb.Update{api("2.0.0", "2.1.0")}},
		{name: "the same image in another file is another update", carried: []gitwb.Update{web("1.0.0", "1.1.0")},
			later: []gitwb.Update{{Image: "r/web", Alias: "web", File: "other/values.yaml", From: "0.9.0", To: "1.1.0"}},
			want:  []gitwb.Update{web("1.0.0", "1.1.0"), {Image: "r/web", Alias: "web", File: "other/values.yaml", From: "0.9.0", To: "1.1.0"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			carried := append([]gitwb.Update(nil), tt.carried...)
			got := gitwb.MergeProposal(tt.carried, tt.later)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("MergeProposal (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(carried, tt.carried); diff != "" {
				t.Errorf("MergeProposal changed what it was given (-before +after):\n%s", diff)
			}
		})
	}
}
