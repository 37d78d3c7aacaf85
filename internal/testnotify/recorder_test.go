package testnotify_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/internal/testnotify"
)

func TestRecorderRecordsAndAnswers(t *testing.T) {
	tests := []struct {
		name       string
		opts       testnotify.RecorderOptions
		wantStatus int
		wantHeader string
		wantBody   string
	}{
		{name: "default answer", wantStatus: http.StatusOK},
		{name: "answer over TLS", opts: testnotify.RecorderOptions{TLS: true, Answer: func(r testnotify.Request) testnotify.Answer {
			return testnotify.Answer{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": "7"}, Body: "slow down " + r.Path}
		}}, wantStatus: http.StatusTooManyRequests, wantHeader: "7", wantBody: "slow down /hook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := testnotify.NewRecorder(t, tt.opts)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, rec.URL+"/hook?x=1", strings.NewReader(`{"a":1}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Token", "t")
			resp, err := rec.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tt.wantStatus || resp.Header.Get("Retry-After") != tt.wantHeader || string(body) != tt.wantBody {
				t.Errorf("answer = %d %q %q, want %d %q %q", resp.StatusCode, resp.Header.Get("Retry-After"), body, tt.wantStatus, tt.wantHeader, tt.wantBody)
			}
			got := rec.Requests()
			if len(got) != 1 || got[0].Header.Get("X-Token") != "t" {
				t.Fatalf("requests = %+v, want one with its X-Token header", got)
			}
			got[0].Header = nil
			want := testnotify.Request{Method: http.MethodPost, Host: strings.TrimPrefix(strings.TrimPrefix(rec.URL, "https://"), "http://"), Path: "/hook", EscapedPath: "/hook", Query: "x=1", Body: `{"a":1}`}
			if diff := cmp.Diff(want, got[0]); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{`{"a":1}`}, rec.Bodies()); diff != "" {
				t.Errorf("bodies (-want +got):\n%s", diff)
			}
		})
	}
}
