package servicetypes_test

import (
	"strings"
	"testing"

	"github.com/crowsnest-dev/crowsnest/config/servicetypes"
)

// TestCheckURL: settings' URLs are checked, `$key` references are left
// for later, and the value never appears in the error.
func TestCheckURL(t *testing.T) {
	tests := []struct {
		name, v string
		wantErr bool
	}{
		{name: "https", v: "https://hooks.example.com/x"},
		{name: "secret reference", v: "$webhook-url"},
		{name: "empty", v: ""},
		{name: "no scheme", v: "hooks.example.com/s3cret", wantErr: true},
		{name: "ftp", v: "ftp://example.com/s3cret", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := servicetypes.CheckURL("webhookUrl", tt.v)
			if (err != nil) != tt.wantErr {
				t.Fatalf("CheckURL(%q) = %v, want error %v", tt.v, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error leaks the value: %v", err)
			}
		})
	}
}
