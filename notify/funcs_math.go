package notify

import (
	"errors"
	"strconv"
	"strings"
	"text/template"
)

// Integer math as in sprig: every argument is converted to int64 first
// (floats truncated, decimal strings parsed, anything else 0), so a
// literal 2 and a 2 that JSON decoding made a float64 mix freely.
// Division and modulo by zero are errors.
func mathFuncs() template.FuncMap {
	return template.FuncMap{
		"add": func(v ...any) int64 {
			var sum int64
			for _, x := range v {
				sum += toInt64(x)
			}
			return sum
		},
		"add1": func(v any) int64 { return toInt64(v) + 1 },
		"sub":  func(a, b any) int64 { return toInt64(a) - toInt64(b) },
		"mul": func(a any, v ...any) int64 {
			p := toInt64(a)
			for _, x := range v {
				p *= toInt64(x)
			}
			return p
		},
		"div": func(a, b any) (int64, error) {
			d := toInt64(b)
			if d == 0 {
				return 0, errors.New("div: division by zero")
			}
			return toInt64(a) / d, nil
		},
		"mod": func(a, b any) (int64, error) {
			d := toInt64(b)
			if d == 0 {
				return 0, errors.New("mod: division by zero")
			}
			return toInt64(a) % d, nil
		},
		"max": func(a any, v ...any) int64 {
			m := toInt64(a)
			for _, x := range v {
				m = max(m, toInt64(x))
			}
			return m
		},
		"min": func(a any, v ...any) int64 {
			m := toInt64(a)
			for _, x := range v {
				m = min(m, toInt64(x))
			}
			return m
		},
		// atoi parses a decimal integer; anything else is 0, as in sprig.
		"atoi": func(v any) int {
			i, err := strconv.Atoi(strings.TrimSpace(toString(v)))
			if err != nil {
				return 0
			}
			return i
		},
		"int":     toInt,
		"int64":   toInt64,
		"float64": toFloat64,
	}
}
