package render

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

// encodingFuncs are crowsnest's own encoding helpers; the JSON encoders,
// fromJson, b64enc and sha256sum are sprig's (fromSprig).
func encodingFuncs() template.FuncMap {
	return template.FuncMap{
		// toYaml is Helm's (sprig has none).
		"toYaml": toYAML,
		// b64dec: sprig's returns the error text as the decoded value
		// (funcTests "b64dec invalid").
		"b64dec": b64dec,
		// urlquery is text/template's, except that nil (a missing field) is
		// "" (not "<nil>").
		"urlquery": func(v any) string { return url.QueryEscape(toString(v)) },
	}
}

// blankIsNull gives sprig's mustFromJson "null" for empty text (a missing
// field), so it decodes to nil as sprig's fromJson does, rather than
// failing; other text that is not JSON still fails.
func blankIsNull(args []any) error {
	if strings.TrimSpace(toString(args[0])) == "" {
		args[0] = "null"
	}
	return nil
}

// ownDicts turns the maps in a freshly decoded value into templateDicts.
func ownDicts(v any) any {
	switch x := v.(type) {
	case map[string]any:
		d := make(templateDict, len(x))
		for k, e := range x {
			d[k] = ownDicts(e)
		}
		return d
	case []any:
		for i, e := range x {
			x[i] = ownDicts(e)
		}
	}
	return v
}

// toYAML encodes v as YAML the way Helm's toYaml does (through JSON, so
// JSON field names and sorted keys), without the final newline.
func toYAML(v any) (string, error) {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("toYaml: %w", err)
	}
	return sized("toYaml", strings.TrimSuffix(string(b), "\n"))
}

func b64dec(v any) (string, error) {
	b, err := base64.StdEncoding.DecodeString(toString(v))
	if err != nil {
		return "", fmt.Errorf("b64dec: %w", err)
	}
	return string(b), nil
}
