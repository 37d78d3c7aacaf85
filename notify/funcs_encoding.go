package notify

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"
)

func encodingFuncs() template.FuncMap {
	return template.FuncMap{
		"toJson":       func(v any) (string, error) { return toJSON("toJson", v, "", true) },
		"toPrettyJson": func(v any) (string, error) { return toJSON("toPrettyJson", v, "  ", true) },
		"toRawJson":    func(v any) (string, error) { return toJSON("toRawJson", v, "", false) },
		"fromJson":     fromJSON,
		"toYaml":       toYAML,
		"b64enc":       func(v any) string { return base64.StdEncoding.EncodeToString([]byte(toString(v))) },
		"b64dec":       b64dec,
		"sha256sum":    func(v any) string { s := sha256.Sum256([]byte(toString(v))); return hex.EncodeToString(s[:]) },
		"urlquery":     func(v any) string { return url.QueryEscape(toString(v)) },
	}
}

// toJSON encodes v; escapeHTML false is toRawJson, which leaves <, > and &
// as they are.
func toJSON(fn string, v any, indent string, escapeHTML bool) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("%s: %w", fn, err)
	}
	return sized(fn, strings.TrimSuffix(b.String(), "\n"))
}

// fromJSON decodes a JSON document; objects become dicts the template may
// change with set. Empty text (a missing field) decodes to nil; text that
// is not JSON is an error (sprig's mustFromJson).
func fromJSON(v any) (any, error) {
	s := toString(v)
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("fromJson: %w", err)
	}
	return ownDicts(out), nil
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
