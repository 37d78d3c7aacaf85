package notifycmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/crowsnest-dev/crowsnest/internal/notifyctl"
)

// printServiceRequests prints each request the dry run of a service from
// package services made (notifyctl.Render): method, URL, headers in name
// order (credentials already redacted) and body, JSON indented. Values of
// the notifications Secret are printed as their `$key` reference wherever
// they appear.
func printServiceRequests(w io.Writer, r *notifyctl.Rendered) error {
	if len(r.Requests) == 0 {
		_, err := fmt.Fprintf(w, "service %s sends nothing for this template and recipient\n", r.Service)
		return err
	}
	var b bytes.Buffer
	for i, req := range r.Requests {
		if i > 0 {
			b.WriteString("\n---\n\n")
		}
		fmt.Fprintf(&b, "%s %s\n", req.Method, req.URL)
		for _, k := range slices.Sorted(maps.Keys(req.Header)) {
			fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(req.Header[k], ", "))
		}
		if len(req.Body) > 0 {
			b.WriteString("\n")
			var pretty bytes.Buffer
			if json.Indent(&pretty, req.Body, "", "  ") == nil {
				b.Write(pretty.Bytes())
			} else {
				b.Write(req.Body)
			}
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, r.HideSecrets(b.String()))
	return err
}
