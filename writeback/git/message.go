package git

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"text/template"

	"github.com/crowsnest-dev/crowsnest/writeback/git/branchtmpl"
)

// DefaultMessage is argocd-image-updater's commit message, so histories
// read the same after switching: a subject naming the application and a
// line per image.
const DefaultMessage = `build: automatic update of {{if eq (len .Apps) 1}}{{index .Apps 0}}{{else}}{{len .Apps}} applications{{end}}
{{range .Updates}}
updates image {{.Image}} tag '{{.From}}' to '{{.To}}'{{if gt (len $.Apps) 1}} ({{.App}}){{end}}
{{- end}}
`

// MessageData is what a commit message template sees: the repository,
// the branch pushed to, the applications updated (sorted) and every value
// changed, in the order the changes were given.
type MessageData struct {
	RepoURL string
	Branch  string
	Apps    []string
	Updates []Update
}

// ParseMessage compiles a commit message template once, at config load.
// The template has no functions beyond text/template's own.
func ParseMessage(text string) (*template.Template, error) {
	t, err := template.New("commit-message").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parsing commit message template: %w", err)
	}
	return t, nil
}

var defaultMessage = template.Must(ParseMessage(DefaultMessage))

func renderMessage(t *template.Template, d MessageData) (string, error) {
	if t == nil {
		t = defaultMessage
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("rendering commit message: %w", err)
	}
	msg := strings.TrimSpace(b.String())
	if msg == "" {
		return "", fmt.Errorf("rendering commit message: empty message")
	}
	return msg + "\n", nil
}

// BranchData is what a templated target branch sees. AppName and SHA256
// (a digest of the app and its new image versions) follow the names
// argocd-image-updater's branch templates use.
type BranchData struct {
	App     string
	AppName string
	Images  []Image
	SHA256  string
}

// splitBranch reads "branch" or "base:target" (target may be a template)
// and returns base and the rendered target, both checked with
// branchtmpl.CheckName: the checks the annotation reader applies, here
// also to a template's output.
func splitBranch(spec string, c *Change) (base, target string, err error) {
	base, target, ok := strings.Cut(spec, ":")
	if !ok {
		target = spec
	}
	if base == "" || target == "" {
		return "", "", fmt.Errorf("branch %q: base and target must not be empty", spec)
	}
	if err := branchtmpl.CheckName(base); err != nil {
		return "", "", err
	}
	if err := branchtmpl.CheckTarget(target); err != nil {
		return "", "", err
	}
	if branchtmpl.IsTemplate(target) {
		t, err := branchtmpl.Parse(target)
		if err != nil {
			return "", "", err
		}
		h := sha256.New()
		h.Write([]byte(c.App))
		for i := range c.Images {
			h.Write([]byte("\x00" + c.Images[i].repo() + c.Images[i].version()))
		}
		d := BranchData{App: c.App, AppName: c.App, Images: c.Images, SHA256: hex.EncodeToString(h.Sum(nil))}
		if target, err = branchtmpl.Render(t, d); err != nil {
			return "", "", err
		}
		if err := branchtmpl.CheckName(target); err != nil {
			return "", "", fmt.Errorf("target branch template %q: %w", spec[len(base)+1:], err)
		}
	}
	return base, target, nil
}
