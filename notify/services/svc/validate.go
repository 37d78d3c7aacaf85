package services

import (
	"fmt"
	"net/url"
	"regexp"
)

// secretRef is a value that is only a `$key` reference into the
// notifications Secret (Argo CD's syntax).
var secretRef = regexp.MustCompile(`^\$[A-Za-z0-9_.-]+$`)

// require reports a missing required setting.
func require(key, v string) error {
	if v == "" {
		return fmt.Errorf("%s: required", key)
	}
	return nil
}

// requireURL reports a missing setting or one that is not an http(s) URL
// with a host.
func requireURL(key, v string) error {
	if v == "" {
		return fmt.Errorf("%s: required", key)
	}
	return checkURL(key, v)
}

// checkURL reports a set value that is not an http(s) URL with a host.
// The value is not printed: it may hold a secret.
func checkURL(key, v string) error {
	if v == "" || secretRef.MatchString(v) {
		return nil // a `$key` the notifications Secret did not answer (yet): checked when sent
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: want an http or https URL with a host", key)
	}
	return nil
}
