package imageref

import (
	"strings"
	"testing"
)

// An image reference someone wrote with credentials in it is refused
// with an error that shows neither the password nor a token (the error
// goes to logs, the Application's Events and the CLI's output).
func TestParseErrorHidesCredentials(t *testing.T) {
	const secret = "pa55-S3CR3T"
	tests := []struct {
		in   string
		want string
	}{
		{in: "user:" + secret + "@registry.example.com/app:1.0", want: `"***@registry.example.com/app:1.0"`},
		{in: "https://user:" + secret + "@registry.example.com/app:1.0", want: `"***@registry.example.com/app:1.0"`},
		{in: secret + "@registry.example.com/app", want: `"***@registry.example.com/app"`},
		{in: "registry.example.com/app:1.0?access_token=" + secret, want: "access_token=***"},
		{in: " user:" + secret + "@registry.example.com/app", want: "empty or surrounded by spaces"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in)
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "S3CR3T") {
				t.Errorf("the error shows the secret: %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "invalid image reference") {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}
