package fieldpath

import "testing"

func TestPaths(t *testing.T) {
	tests := []struct{ got, want string }{
		{Join("", "registries"), "registries"},
		{Join("registries", "list"), "registries.list"},
		{Index("registries.list", 2), "registries.list[2]"},
		{Join(Index("spec.applicationRefs", 0), "images"), "spec.applicationRefs[0].images"},
		{Parent("registries.list[2].prefix"), "registries.list[2]"},
		{Parent("registries.list[2]"), "registries.list"},
		{Parent("registries"), ""},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
