package controller_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crowsnest-dev/crowsnest/controller"
)

// messages records Event messages.
type messages []string

func (m *messages) Event(_ runtime.Object, _, _, msg string) { *m = append(*m, msg) }

func TestRedactEvents(t *testing.T) {
	var got messages
	rec := controller.RedactEvents(&got)
	rec.Event(nil, "Warning", "InvalidAnnotation", `image "user:pa55@registry.example.com/app:1.0": invalid`)
	rec.Event(nil, "Warning", "ImageUpdateFailed", "git write-back: pushing to https://bot:t0ken@git.example.com/r.git: refused")
	rec.Event(nil, "Normal", "ImagesUpdated", "ghcr.io/org/web: 1.0 -> 1.1")
	want := messages{
		`image "***@registry.example.com/app:1.0": invalid`,
		"git write-back: pushing to https://***@git.example.com/r.git: refused",
		"ghcr.io/org/web: 1.0 -> 1.1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Event messages (-want +got):\n%s", diff)
	}
	if controller.RedactEvents(rec) != rec || controller.RedactEvents(nil) != nil {
		t.Error("RedactEvents wraps twice or wraps nil")
	}
}
