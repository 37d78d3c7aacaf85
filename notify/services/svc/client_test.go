package svc_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/crowsnest-dev/crowsnest/notify"
	"github.com/crowsnest-dev/crowsnest/notify/services/svc"
)

// TestClientStatuses: how the shared client shapes each answer for the
// outbox, and that no error quotes the URL's secret path or query.
func TestClientStatuses(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		header        map[string]string
		ok            []int
		wantErr       bool
		wantPermanent bool
		wantWait      time.Duration // a *notify.RateLimitError's wait, when > 0
	}{
		{name: "2xx", status: http.StatusAccepted},
		{name: "listed in OK", status: http.StatusNotFound, ok: []int{http.StatusNotFound}},
		{name: "429 with Retry-After", status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "7"}, wantErr: true, wantWait: 7 * time.Second},
		{name: "429 without a wait", status: http.StatusTooManyRequests, wantErr: true},
		{name: "408 retried", status: http.StatusRequestTimeout, wantErr: true},
		{name: "4xx permanent", status: http.StatusBadRequest, wantErr: true, wantPermanent: true},
		{name: "5xx retried", status: http.StatusBadGateway, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(`{"error":"answer"}`))
			}))
			t.Cleanup(srv.Close)
			c := svc.NewClient("test.svc", false, svc.Options{})
			t.Cleanup(func() { _ = c.Close() })
			resp, err := c.Do(t.Context(), svc.Request{Method: http.MethodPost, URL: srv.URL + "/hook/s3cret?token=s3cret", JSON: map[string]string{"a": "b"}, OK: tt.ok})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if resp == nil || resp.Status != tt.status {
				t.Fatalf("response %+v, want status %d", resp, tt.status)
			}
			if err == nil {
				return
			}
			got := struct {
				Permanent bool
				Wait      time.Duration
				Leaks     bool
			}{notify.IsPermanent(err), 0, strings.Contains(err.Error(), "s3cret")}
			var rl *notify.RateLimitError
			if errors.As(err, &rl) {
				got.Wait = rl.RetryAfter
			}
			want := got
			want.Permanent, want.Wait, want.Leaks = tt.wantPermanent, tt.wantWait, false
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("error %q (-want +got):\n%s", err, d)
			}
		})
	}
}
