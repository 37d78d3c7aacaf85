package configcheck

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/crowsnest-dev/crowsnest/config"
	"github.com/crowsnest-dev/crowsnest/internal/setup"
	"github.com/crowsnest-dev/crowsnest/triggers"
)

// notificationsConfigMap reads the data of the file at path when it is a
// Kubernetes ConfigMap manifest, with the line of each data key.
func notificationsConfigMap(path string) (data map[string]string, lines map[string]int, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, false
	}
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, false
	}
	root := doc.Content[0]
	var kind string
	var dataNode *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "kind":
			kind = root.Content[i+1].Value
		case "data":
			dataNode = root.Content[i+1]
		}
	}
	if kind != "ConfigMap" {
		return nil, nil, false
	}
	data, lines = map[string]string{}, map[string]int{}
	if dataNode != nil && dataNode.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(dataNode.Content); i += 2 {
			k, v := dataNode.Content[i], dataNode.Content[i+1]
			data[k.Value] = v.Value
			lines[k.Value] = k.Line
		}
	}
	return data, lines, true
}

// validateNotificationsCM returns every problem of an argocd-notifications-cm:
// what the daemon rejects at load, what it could not send (a service type
// or template block crowsnest has no sender for: at run time a warning,
// here a problem, so a migration is checked before it silently loses a
// channel), and the triggers' expressions and templates. `$key`
// references are not resolved (no Secret is read).
func validateNotificationsCM(data map[string]string, lines map[string]int) []config.FieldError {
	lineOf := func(path string) int {
		best := ""
		for k := range lines {
			if (path == k || strings.HasPrefix(path, k+".") || strings.HasPrefix(path, k+"[")) && len(k) > len(best) {
				best = k
			}
		}
		return lines[best]
	}
	var out []config.FieldError
	n, err := config.ParseArgoCDConfigMap(data, nil)
	if err != nil {
		var ve *config.ValidationError
		if !errors.As(err, &ve) || n == nil {
			return []config.FieldError{{Msg: err.Error()}}
		}
		for _, fe := range ve.Errors {
			fe.Line = lineOf(fe.Path)
			out = append(out, fe)
		}
		// Services that failed to decode are left out of n; their
		// subscribers' problems are already said.
	}
	for _, u := range n.Unsupported {
		key, why, _ := strings.Cut(u, " (")
		out = append(out, config.FieldError{Path: key, Line: lineOf(key), Msg: strings.TrimSuffix(why, ")") + ": its notifications would not be sent"})
	}
	if _, err := triggers.Compile(n); err != nil {
		for _, e := range setup.FlattenErrors(err) {
			var ce *triggers.CompileError
			if errors.As(e, &ce) {
				path := fmt.Sprintf("trigger.%s[%d].%s", ce.Trigger, ce.Condition, ce.Field)
				out = append(out, config.FieldError{Path: path, Line: lineOf("trigger." + ce.Trigger), Msg: ce.Msg + ce.Snippet})
				continue
			}
			out = append(out, config.FieldError{Msg: e.Error()})
		}
	}
	return out
}
