package servicetypes

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
)

// secretRef matches a value that is only a `$key` reference into the
// notifications Secret (Argo CD's syntax).
var secretRef = regexp.MustCompile(`^\$[A-Za-z0-9_.-]+$`)

// Require reports a missing required setting.
func Require(key, v string) error {
	if v == "" {
		return fmt.Errorf("%s: required", key)
	}
	return nil
}

// RequireURL reports a missing setting or one that is not an http(s) URL
// with a host.
func RequireURL(key, v string) error {
	if v == "" {
		return fmt.Errorf("%s: required", key)
	}
	return CheckURL(key, v)
}

// CheckURL reports a set value that is not an http(s) URL with a host.
// The value is not printed: it may hold a secret.
func CheckURL(key, v string) error {
	if v == "" || IsSecretRef(v) {
		return nil // a `$key` the notifications Secret did not answer (yet): checked when sent
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: want an http or https URL with a host", key)
	}
	return nil
}

// IsSecretRef reports whether v is only a `$key` reference the
// notifications Secret did not answer (yet): such a value is checked
// when the service is built or sent, not when the config is read.
func IsSecretRef(v string) bool { return secretRef.MatchString(v) }

// CheckRecipientURLs checks every URL of a recipient → webhook map. Errors
// name the recipient, never the URL (its path is the secret).
func CheckRecipientURLs(key string, urls map[string]string) error {
	names := make([]string, 0, len(urls))
	for name := range urls {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		errs = append(errs, RequireURL(key+"["+name+"]", urls[name]))
	}
	return errors.Join(errs...)
}
