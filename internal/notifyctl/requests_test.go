package notifyctl

import (
	"strings"
	"testing"
)

// A dry run's token exchange (Pub/Sub's service-account JWT, an STS web
// identity) prints no credential.
func TestRedactFormHidesMintedCredentials(t *testing.T) {
	got := string(redactForm([]byte("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=eyJhbGciOi.payload.sig")))
	if strings.Contains(got, "eyJhbGciOi") || !strings.Contains(got, "assertion=%3Credacted%3E") || !strings.Contains(got, "grant_type=") {
		t.Errorf("redacted form %q", got)
	}
	if got := string(redactForm([]byte("user=u1&message=hi"))); got != "user=u1&message=hi" {
		t.Errorf("form without credentials changed: %q", got)
	}
}
