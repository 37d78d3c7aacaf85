package git

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// remoteMarker stands for what an internal service would answer: it must
// never show in an error the writer returns (Events and notifications
// show them).
const remoteMarker = "INTERNAL-ANSWER-7f3a"

// A Git URL pointing at a server that answers with an error status and a
// body (or with a 200 that is no Git protocol) gives an error that says
// the status, not the body.
func TestRemoteAnswerBodyNeverInError(t *testing.T) {
	pkt := func(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }
	tests := []struct {
		name     string
		status   int
		body     string
		wantText string
	}{
		{name: "401", status: http.StatusUnauthorized, body: "denied: " + remoteMarker, wantText: "authentication required (HTTP 401)"},
		{name: "403", status: http.StatusForbidden, body: "<html>" + remoteMarker + "</html>", wantText: "authorization failed (HTTP 403)"},
		{name: "404", status: http.StatusNotFound, body: `{"secret":"` + remoteMarker + `"}`, wantText: "repository not found (HTTP 404)"},
		{name: "500", status: http.StatusInternalServerError, body: remoteMarker, wantText: "status code: 500"},
		{name: "200, not Git", status: http.StatusOK, body: pkt("# service=git-upload-pack\n") + "0000" + pkt("shallow "+remoteMarker+"\n") + "0000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			w := newWriter(t, nil)
			w.MaxAttempts = 1
			res, err := w.Apply(t.Context(), []Change{kustomizeWeb(srv.URL+"/apps.git", "1.2.0")})
			if err == nil || len(res) != 1 || res[0].Err == nil {
				t.Fatalf("Apply: %v, %+v; want a failure", err, res)
			}
			for _, text := range []string{err.Error(), res[0].Err.Error()} {
				if strings.Contains(text, remoteMarker) {
					t.Errorf("the server's answer shows in the error: %s", text)
				}
				if !strings.Contains(text, tt.wantText) {
					t.Errorf("error %q does not say %q", text, tt.wantText)
				}
			}
		})
	}
}
