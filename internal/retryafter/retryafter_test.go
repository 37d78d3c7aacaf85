package retryafter

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{in: "", wantOK: false},
		{in: "7", want: 7 * time.Second, wantOK: true},
		{in: " 0 ", want: 0, wantOK: true},
		{in: "-3", wantOK: false},
		{in: "Sun, 22 Nov 2026 10:00:30 GMT", want: 30 * time.Second, wantOK: true},
		{in: "Sun, 22 Nov 2026 09:00:00 GMT", want: 0, wantOK: true},
		{in: "soon", wantOK: false},
	}
	for _, tt := range tests {
		got, ok := Parse(tt.in, now)
		if diff := cmp.Diff([]any{tt.want, tt.wantOK}, []any{got, ok}); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestFromHeader(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tests := []struct {
		name   string
		h      http.Header
		want   time.Duration
		wantOK bool
	}{
		{"nothing", http.Header{}, 0, false},
		{"Retry-After wins", http.Header{"Retry-After": {"3"}, "X-Ratelimit-Reset": {"1800000060"}}, 3 * time.Second, true},
		{"reset time", http.Header{"X-Ratelimit-Reset": {"1800000060"}}, time.Minute, true},
		{"reset passed", http.Header{"X-Ratelimit-Reset": {"1799999000"}}, 0, true},
		{"unreadable reset", http.Header{"X-Ratelimit-Reset": {"soon"}}, 0, false},
	}
	for _, tt := range tests {
		got, ok := FromHeader(tt.h, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: FromHeader = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}
