package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/crowsnest-dev/crowsnest/config/internal/strictyaml"
)

// Duration is a time.Duration read from a Go duration string ("90s",
// "1h30m") or with whole days in front ("7d", "1d12h"), since sync windows
// and retention are naturally counted in days.
type Duration struct{ time.Duration }

// maxDays is the most whole days a time.Duration holds (about 292
// years); more would wrap around to a negative or a wrong value.
const maxDays = uint64(math.MaxInt64 / int64(24*time.Hour))

// ParseDuration reads a Duration.
func ParseDuration(s string) (Duration, error) {
	orig := s
	s = strings.TrimSpace(s)
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseUint(s[:i], 10, 32)
		if err != nil {
			return Duration{}, fmt.Errorf("invalid duration %q: days must be a whole number", orig)
		}
		if n > maxDays {
			return Duration{}, fmt.Errorf("invalid duration %q: at most %dd", orig, maxDays)
		}
		days = time.Duration(n) * 24 * time.Hour
		s = s[i+1:]
		if s == "" {
			return Duration{days}, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return Duration{}, fmt.Errorf("invalid duration %q: want e.g. 30s, 5m, 1h30m or 7d", orig)
	}
	if days > 0 && d < 0 {
		return Duration{}, fmt.Errorf("invalid duration %q: mixed signs", orig)
	}
	if d > math.MaxInt64-days {
		return Duration{}, fmt.Errorf("invalid duration %q: longer than %s", orig, time.Duration(math.MaxInt64))
	}
	return Duration{days + d}, nil
}

func (d *Duration) decodeNode(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.Tag != "!!int") {
		return fmt.Errorf("expected a duration such as 30s or 7d, got %s", strictyaml.Describe(n))
	}
	if n.Tag == "!!int" && n.Value != "0" {
		return fmt.Errorf("invalid duration %s: add a unit, e.g. %ss", n.Value, n.Value)
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalYAML writes the duration in Go's notation, which ParseDuration reads.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }
