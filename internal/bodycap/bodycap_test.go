package bodycap

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var errTooLarge = errors.New("too large")

// A body within the limit reads whole, one at the limit too; one byte
// more fails with the caller's error after the limit was read.
func TestReader(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		left    int64
		want    string
		wantErr error
	}{
		{name: "under", body: "abc", left: 5, want: "abc"},
		{name: "at the limit", body: "abcde", left: 5, want: "abcde"},
		{name: "one over", body: "abcdef", left: 5, want: "abcde", wantErr: errTooLarge},
		{name: "far over", body: strings.Repeat("x", 1<<20), left: 10, want: strings.Repeat("x", 10), wantErr: errTooLarge},
		{name: "empty", body: "", left: 0, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reader{ReadCloser: io.NopCloser(strings.NewReader(tt.body)), Left: tt.left, Err: errTooLarge}
			got, err := io.ReadAll(r)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("read (-want +got):\n%s", diff)
			}
		})
	}
}
