package services

import (
	"fmt"
	"net/url"
)

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
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: want an http or https URL with a host", key)
	}
	return nil
}
