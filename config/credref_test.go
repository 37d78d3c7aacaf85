package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ParseCredentials is what the registry client and the update decisions
// read settings with: "" is anonymous, errors say "credentials:".
func TestParseCredentials(t *testing.T) {
	tests := []struct {
		in      string
		want    CredentialRef
		wantErr string
	}{
		{in: "", want: CredentialRef{}},
		{in: "pullsecret:argocd/regcred", want: CredentialRef{Source: CredsPullSecret, Namespace: "argocd", Name: "regcred"}},
		{in: "hunter2", wantErr: "credentials: missing source; want pullsecret:"},
		{in: "secret:argocd/creds", wantErr: "credentials: secret: missing #<field>"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseCredentials(tt.in)
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want prefix %q", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
