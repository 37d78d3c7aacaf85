package config

import (
	"fmt"
	"os"
	"strings"

	"github.com/crowsnest-dev/crowsnest/config/internal/fieldpath"
)

// Checked is a config file read for checking: the config as decoded (even
// when it has problems), its schema problems, and where each field was
// read, so a caller's further checks (expressions, templates, what run
// builds) can point into the file too.
type Checked struct {
	// Config is nil only when the file is not a YAML mapping (then
	// Problems says why and there is nothing more to check).
	Config *Config
	// Problems are the schema problems, in file order of discovery.
	Problems []FieldError
	lines    map[string]int
}

// Line is the 1-based line the field at path was read from, or that of the
// nearest enclosing field that was read; 0 when none was.
func (c *Checked) Line(path string) int {
	for p := path; p != ""; p = fieldpath.Parent(p) {
		if l := c.lines[p]; l > 0 {
			return l
		}
	}
	return 0
}

// Covers reports whether a schema problem is already about path, one of
// its enclosing fields or a field within it: a further check's complaint
// about path would repeat that problem, or judge a value the schema
// rejected (which may be a pasted secret the schema refused to echo).
func (c *Checked) Covers(path string) bool {
	if path == "" {
		return false
	}
	for _, p := range c.Problems {
		if p.Path == path || strings.HasPrefix(p.Path, path+".") || strings.HasPrefix(p.Path, path+"[") {
			return true
		}
	}
	return decodedBadly(path, c.Problems)
}

// ParseChecked decodes and validates data like Parse, but keeps the
// config whatever its schema problems, so every later check can still run
// in the same pass.
func ParseChecked(data []byte) *Checked {
	c := &Config{}
	errs := &fieldErrors{}
	decodeStrict(data, c, errs)
	decodeErrs := len(errs.list)
	if decodeErrs > 0 && errs.list[0].Path == "" {
		return &Checked{Problems: errs.list}
	}
	c.setDefaults()
	c.validate(errs)
	errs.dropAfterDecode(decodeErrs)
	return &Checked{Config: c, Problems: errs.list, lines: errs.lines}
}

// LoadChecked reads the file at path and parses it with ParseChecked.
func LoadChecked(path string) (*Checked, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return ParseChecked(data), nil
}
