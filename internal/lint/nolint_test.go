package lint_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// standardLinters are golangci-lint's "standard" set, which
// .golangci.yml enables with `default: standard`.
var standardLinters = []string{"errcheck", "govet", "ineffassign", "staticcheck", "unused"}

var nolintRE = regexp.MustCompile(`//nolint:([a-z0-9,]+)`)

// TestNolintNamesEnabledLinters fails for every //nolint comment that
// names a linter .golangci.yml does not enable: it silences nothing, and
// reads as if a check had been looked at. Enable the linter on purpose or
// leave the reason as a plain comment.
func TestNolintNamesEnabledLinters(t *testing.T) {
	root := moduleRoot(t)
	data, err := os.ReadFile(filepath.Join(root, ".golangci.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Linters struct {
			Default string   `yaml:"default"`
			Enable  []string `yaml:"enable"`
		} `yaml:"linters"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Linters.Default != "standard" || len(cfg.Linters.Enable) == 0 {
		t.Fatalf(".golangci.yml: linters default %q, %d enabled; this test knows the standard set only", cfg.Linters.Default, len(cfg.Linters.Enable))
	}
	enabled := append(slices.Clone(standardLinters), cfg.Linters.Enable...)
	var found []string
	err = walkGoFiles(root, func(path, rel string) error {
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			for _, m := range nolintRE.FindAllStringSubmatch(line, -1) {
				for name := range strings.SplitSeq(m[1], ",") {
					if !slices.Contains(enabled, name) {
						found = append(found, rel+":"+strconv.Itoa(i+1)+": "+name)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s is not enabled in .golangci.yml", f)
	}
}
