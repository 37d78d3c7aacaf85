package registry

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/crowsnest-dev/crowsnest/internal/redact"
)

// knownCodes are the error codes of the distribution spec (and
// docker/distribution's UNAVAILABLE): a fixed vocabulary that says what
// went wrong without anything the registry wrote.
var knownCodes = map[transport.ErrorCode]bool{
	transport.BlobUnknownErrorCode: true, transport.BlobUploadInvalidErrorCode: true, transport.BlobUploadUnknownErrorCode: true,
	transport.DigestInvalidErrorCode: true, transport.ManifestBlobUnknownErrorCode: true, transport.ManifestInvalidErrorCode: true,
	transport.ManifestUnknownErrorCode: true, transport.ManifestUnverifiedErrorCode: true, transport.NameInvalidErrorCode: true,
	transport.NameUnknownErrorCode: true, transport.SizeInvalidErrorCode: true, transport.TagInvalidErrorCode: true,
	transport.UnauthorizedErrorCode: true, transport.DeniedErrorCode: true, transport.UnsupportedErrorCode: true,
	transport.TooManyRequestsErrorCode: true, transport.UnknownErrorCode: true, transport.UnavailableErrorCode: true,
}

// remoteError is the one place where a registry's answer leaves the
// client's errors: go-containerregistry's transport.Error carries the
// answer's body (up to 64 KiB when it is not the spec's JSON, else the
// messages and details of each error). The image, so the registry host,
// comes from an Application's annotation, and the error goes to its
// Events and notifications: an internal service's answer must not be
// readable there. The text keeps the request, the status and the spec's
// error codes; errors.As still finds the transport.Error.
func remoteError(err error) error {
	return redact.Rewrite(err, func(e error) (string, bool) {
		te, ok := e.(*transport.Error) //nolint:errorlint // Rewrite visits each node of the chain; this one only
		if !ok {
			return "", false
		}
		var b strings.Builder
		if te.Request != nil && te.Request.URL != nil {
			fmt.Fprintf(&b, "%s %s: ", te.Request.Method, redact.URL(te.Request.URL.Redacted()))
		}
		fmt.Fprintf(&b, "HTTP %d %s", te.StatusCode, http.StatusText(te.StatusCode))
		var codes []string
		for _, d := range te.Errors {
			if knownCodes[d.Code] {
				codes = append(codes, string(d.Code))
			}
		}
		if len(codes) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(codes, ", "))
		}
		return b.String(), true
	})
}
