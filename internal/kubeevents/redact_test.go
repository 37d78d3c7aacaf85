package kubeevents_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/crowsnest-dev/crowsnest/internal/kubeevents"
)

// messages records Event messages.
type messages []string

func (m *messages) Event(_ runtime.Object, _, _, msg string) { *m = append(*m, msg) }

func TestRedact(t *testing.T) {
	var got messages
	rec := kubeevents.Redact(&got)
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
	if kubeevents.Redact(rec) != rec || kubeevents.Redact(nil) != nil {
		t.Error("Redact wraps twice or wraps nil")
	}
}
