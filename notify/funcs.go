package notify

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"
)

// FuncNames lists the helper functions every template may call, so config
// validation (and the triggers package) can check a template without
// rendering it. FuncMap returns the implementations.
var FuncNames = []string{
	"upper", "lower", "title", "trim", "trimPrefix", "trimSuffix", "replace",
	"contains", "hasPrefix", "hasSuffix", "split", "join", "repeat", "truncate",
	"trunc", // sprig's name for truncate, which the catalog's templates use
	"default", "empty", "coalesce", "ternary", "toString", "toJson",
	"toPrettyJson", "quote", "squote", "indent", "nindent", "now", "date",
	"dateRFC3339", "unixEpoch", "toDate", "ago", "b64enc", "b64dec",
	"sha256sum", "urlquery", "dig", "list", "dict", "keys", "first", "last",
	"repoURLToHTTPS", "repoFullName", "orEmpty",
}

// FuncMap returns the template helpers bound to the clock now (nil means
// time.Now). The set is hermetic: no environment, files or network.
func FuncMap(now func() time.Time) template.FuncMap {
	if now == nil {
		now = time.Now
	}
	return template.FuncMap{
		"upper":          func(v any) string { return strings.ToUpper(toString(v)) },
		"lower":          func(v any) string { return strings.ToLower(toString(v)) },
		"title":          title,
		"trim":           func(v any) string { return strings.TrimSpace(toString(v)) },
		"trimPrefix":     func(prefix string, v any) string { return strings.TrimPrefix(toString(v), prefix) },
		"trimSuffix":     func(suffix string, v any) string { return strings.TrimSuffix(toString(v), suffix) },
		"replace":        func(old, repl string, v any) string { return strings.ReplaceAll(toString(v), old, repl) },
		"contains":       func(sub string, v any) bool { return strings.Contains(toString(v), sub) },
		"hasPrefix":      func(prefix string, v any) bool { return strings.HasPrefix(toString(v), prefix) },
		"hasSuffix":      func(suffix string, v any) bool { return strings.HasSuffix(toString(v), suffix) },
		"split":          func(sep string, v any) []string { return strings.Split(toString(v), sep) },
		"join":           join,
		"repeat":         repeat,
		"truncate":       truncate,
		"trunc":          truncate,
		"default":        func(def, v any) any { return ternary(v, def, !isEmpty(v)) },
		"empty":          isEmpty,
		"coalesce":       coalesce,
		"ternary":        ternary,
		"toString":       toString,
		"toJson":         func(v any) (string, error) { return toJSON(v, "") },
		"toPrettyJson":   func(v any) (string, error) { return toJSON(v, "  ") },
		"quote":          func(v any) string { return strconv.Quote(toString(v)) },
		"squote":         func(v any) string { return "'" + toString(v) + "'" },
		"indent":         indent,
		"nindent":        func(n int, v any) string { return "\n" + indent(n, v) },
		"now":            now,
		"date":           formatDate,
		"dateRFC3339":    func(v any) string { return formatDate(time.RFC3339, v) },
		"unixEpoch":      func(v any) string { t, _ := asTime(v); return strconv.FormatInt(t.Unix(), 10) },
		"toDate":         toDate,
		"ago":            func(v any) string { t, _ := asTime(v); return now().Sub(t).Round(time.Second).String() },
		"b64enc":         func(v any) string { return base64.StdEncoding.EncodeToString([]byte(toString(v))) },
		"b64dec":         b64dec,
		"sha256sum":      func(v any) string { s := sha256.Sum256([]byte(toString(v))); return hex.EncodeToString(s[:]) },
		"urlquery":       func(v any) string { return url.QueryEscape(toString(v)) },
		"dig":            dig,
		"list":           func(v ...any) []any { return v },
		"dict":           dict,
		"keys":           keys,
		"first":          func(v any) any { return at(v, 0) },
		"last":           func(v any) any { return at(v, -1) },
		"repoURLToHTTPS": func(v any) string { return RepoURLToHTTPS(toString(v)) },
		"repoFullName":   func(v any) string { return FullNameByRepoURL(toString(v)) },
		"orEmpty":        orEmpty,
	}
}

// maxRepeat bounds repeat and indent, so a template cannot allocate
// gigabytes from a small config value.
const maxRepeat = 10000

func toString(v any) string {
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return s
	case []byte:
		return string(s)
	case fmt.Stringer:
		return s.String()
	case error:
		return s.Error()
	}
	return fmt.Sprint(v)
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func title(v any) string {
	words := strings.Fields(toString(v))
	for i, w := range words {
		r, n := utf8.DecodeRuneInString(w)
		words[i] = strings.ToUpper(string(r)) + w[n:]
	}
	return strings.Join(words, " ")
}

func join(sep string, v any) string {
	var parts []string
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return toString(v)
	}
	for i := range rv.Len() {
		parts = append(parts, toString(rv.Index(i).Interface()))
	}
	return strings.Join(parts, sep)
}

func repeat(n int, v any) (string, error) {
	if n < 0 || n > maxRepeat {
		return "", fmt.Errorf("repeat count %d out of range 0..%d", n, maxRepeat)
	}
	return strings.Repeat(toString(v), n), nil
}

func indent(n int, v any) string {
	n = max(0, min(n, maxRepeat))
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(toString(v), "\n", "\n"+pad)
}

// truncate keeps the first n runes (a negative n keeps the last -n).
func truncate(n int, v any) string {
	r := []rune(toString(v))
	switch {
	case n >= 0 && n < len(r):
		return string(r[:n])
	case n < 0 && -n < len(r):
		return string(r[len(r)+n:])
	}
	return string(r)
}

func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array:
		return rv.Len() == 0
	case reflect.Bool:
		return !rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return rv.Float() == 0
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

func coalesce(v ...any) any {
	for _, x := range v {
		if !isEmpty(x) {
			return x
		}
	}
	return nil
}

func ternary(yes, no any, cond bool) any {
	if cond {
		return yes
	}
	return no
}

func toJSON(v any, ind string) (string, error) {
	var b []byte
	var err error
	if ind == "" {
		b, err = json.Marshal(v)
	} else {
		b, err = json.MarshalIndent(v, "", ind)
	}
	if err != nil {
		return "", fmt.Errorf("toJson: %w", err)
	}
	return string(b), nil
}

// asTime reads a time.Time, an RFC 3339 string (Kubernetes timestamps) or
// Unix seconds.
func asTime(v any) (time.Time, bool) {
	switch t := v.(type) {
	case time.Time:
		return t, true
	case *time.Time:
		if t != nil {
			return *t, true
		}
	case string:
		if p, err := time.Parse(time.RFC3339Nano, t); err == nil {
			return p, true
		}
	case int:
		return time.Unix(int64(t), 0).UTC(), true
	case int64:
		return time.Unix(t, 0).UTC(), true
	case float64:
		return time.Unix(int64(t), 0).UTC(), true
	}
	return time.Time{}, false
}

// formatDate formats a time with a Go layout; a value that is not a time
// renders as empty rather than as year one.
func formatDate(layout string, v any) string {
	t, ok := asTime(v)
	if !ok {
		return ""
	}
	return t.Format(layout)
}

func toDate(layout string, v any) (time.Time, error) {
	t, err := time.Parse(layout, toString(v))
	if err != nil {
		return time.Time{}, fmt.Errorf("toDate: %w", err)
	}
	return t, nil
}

func b64dec(v any) (string, error) {
	b, err := base64.StdEncoding.DecodeString(toString(v))
	if err != nil {
		return "", fmt.Errorf("b64dec: %w", err)
	}
	return string(b), nil
}

func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("dict: odd number of arguments (%d)", len(kv))
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		m[toString(kv[i])] = kv[i+1]
	}
	return m, nil
}

func keys(v any) []string {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map {
		return nil
	}
	out := make([]string, 0, rv.Len())
	for _, k := range rv.MapKeys() {
		out = append(out, toString(k.Interface()))
	}
	sort.Strings(out)
	return out
}

func at(v any, i int) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array && rv.Kind() != reflect.String {
		return nil
	}
	if rv.Len() == 0 {
		return nil
	}
	if i < 0 {
		i = rv.Len() + i
	}
	if rv.Kind() == reflect.String {
		return string(rv.String()[i])
	}
	return rv.Index(i).Interface()
}

// dig walks keys through nested maps (and exported struct fields), giving
// nil for anything missing. Templates' field chains (.app.status.x) are
// rewritten into dig calls, so a missing field renders as empty instead of
// failing on a nil intermediate.
func dig(v any, path ...string) any {
	for _, k := range path {
		if v == nil {
			return nil
		}
		if m, ok := v.(map[string]any); ok {
			v = m[k]
			continue
		}
		v = reflectField(reflect.ValueOf(v), k)
	}
	return v
}

func reflectField(rv reflect.Value, k string) any {
	for rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil
		}
		x := rv.MapIndex(reflect.ValueOf(k).Convert(rv.Type().Key()))
		if !x.IsValid() {
			return nil
		}
		return x.Interface()
	case reflect.Struct:
		f, ok := rv.Type().FieldByName(k)
		if !ok || !f.IsExported() {
			return nil
		}
		x, err := rv.FieldByIndexErr(f.Index)
		if err != nil {
			return nil
		}
		return x.Interface()
	}
	return nil
}
