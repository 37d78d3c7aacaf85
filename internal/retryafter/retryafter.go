// Package retryafter reads how long an HTTP server asks its client to
// wait: the one parser of Retry-After for registries, webhooks and every
// notification service.
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Parse reads a Retry-After value: delta seconds or an HTTP date (a date
// in the past is no wait). It reports false for an empty or unreadable
// value.
func Parse(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// FromHeader reads Retry-After, else X-RateLimit-Reset as a Unix time in
// seconds (GitHub and others send it with a 429).
func FromHeader(h http.Header, now time.Time) (time.Duration, bool) {
	if d, ok := Parse(h.Get("Retry-After"), now); ok {
		return d, true
	}
	if v := strings.TrimSpace(h.Get("X-RateLimit-Reset")); v != "" {
		if secs, err := strconv.ParseInt(v, 10, 64); err == nil && secs > 0 {
			return max(0, time.Unix(secs, 0).Sub(now)), true
		}
	}
	return 0, false
}
