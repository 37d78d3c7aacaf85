package branchtmpl

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"text/template"
)

// Parse compiles the target part of a "base:target" branch, for
// validating annotations and config at load and for rendering.
func Parse(text string) (*template.Template, error) {
	t, err := template.New("branch").Funcs(funcs).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parsing branch template: %w", err)
	}
	if err := checkBranchTemplate(t); err != nil {
		return nil, err
	}
	return t, nil
}

var funcs = template.FuncMap{
	// sha256 makes a stable, branch-name-safe digest of any text, as
	// argocd-image-updater's SHA256 helper does.
	"sha256": func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])
	},
}

// Render executes a template from Parse with data, failing once the
// output passes the branch-name limit, and trims the spaces around it.
func Render(t *template.Template, data any) (string, error) {
	var b bytes.Buffer
	if err := t.Execute(&cappedWriter{w: &b, max: maxBranchBytes}, data); err != nil {
		return "", fmt.Errorf("rendering branch template: %w", err)
	}
	return strings.TrimSpace(b.String()), nil
}
