package config

import (
	"errors"
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
