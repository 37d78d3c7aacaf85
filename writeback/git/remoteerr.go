package git

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"

	// Named apart from this package's own redact (creds.go).
	redactrule "github.com/crowsnest-dev/crowsnest/internal/redact"
)

// remoteStatus are the HTTP answers go-git turns into these sentinels,
// copying the answer's body after them ("authorization failed: <body>").
var remoteStatus = map[error]int{
	transport.ErrAuthenticationRequired: http.StatusUnauthorized,
	transport.ErrAuthorizationFailed:    http.StatusForbidden,
	transport.ErrRepositoryNotFound:     http.StatusNotFound,
}

// remoteError is the one place where a Git server's answer leaves the
// writer's errors: they say the status ("authorization failed (HTTP
// 403)") and never the body of the answer, which go-git copies into its
// error for 401, 403 and 404 (and a pkt-line it could not read into a
// protocol error). The repository URL comes from an Application, so the
// server may be anything its author can reach; its answer must not be
// readable through the Event or notification that shows the error.
// errors.Is and As still see the original.
func remoteError(err error) error {
	return redactrule.Rewrite(err, func(e error) (string, bool) {
		var data *packp.ErrUnexpectedData
		if errors.As(e, &data) && e == error(data) { //nolint:errorlint // this node of the chain, not one wrapping it
			return data.Msg, len(data.Data) > 0
		}
		inner := errors.Unwrap(e)
		code, ok := remoteStatus[inner]
		if !ok || !strings.HasPrefix(e.Error(), inner.Error()+":") {
			return "", false
		}
		return fmt.Sprintf("%s (HTTP %d)", inner, code), true
	})
}
