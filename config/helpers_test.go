package config

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// gotFieldErrors returns err's FieldErrors with each Msg cut to the fragment
// of want at the same position when it contains it, for comparison.
func gotFieldErrors(t *testing.T, err error, want []FieldError) []FieldError {
	t.Helper()
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	got := make([]FieldError, len(verr.Errors))
	for i, fe := range verr.Errors {
		got[i] = fe
		if i < len(want) && strings.Contains(fe.Msg, want[i].Msg) {
			got[i].Msg = want[i].Msg
		}
	}
	return got
}

// commentedExample returns the example config's commented-out block that
// starts with "# <key>:", uncommented, for tests that check it loads.
func commentedExample(t *testing.T, key string) string {
	t.Helper()
	data, err := os.ReadFile("../examples/config/crowsnest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var block []string
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		if line != "# "+key+":" {
			continue
		}
		block = append(block, key+":")
		for _, l := range lines[i+1:] {
			if !strings.HasPrefix(l, "#  ") {
				break
			}
			block = append(block, strings.TrimPrefix(l, "#"))
		}
		break
	}
	if len(block) == 0 {
		t.Fatalf("the example config has no commented %q block", key)
	}
	return strings.Join(block, "\n")
}
