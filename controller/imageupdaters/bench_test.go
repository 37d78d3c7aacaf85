package imageupdaters

import (
	"fmt"
	"testing"

	"github.com/crowsnest-dev/crowsnest/watcher"
)

// BenchmarkStatusPass is one status pass's computation (the writer's
// observe) over 10,000 Applications in 100 namespaces, each with one
// ImageUpdater of 10 applicationRefs: it runs every DefaultStatusInterval.
func BenchmarkStatusPass(b *testing.B) {
	s := newSet(b)
	var list apps
	for n := range 100 {
		doc := fmt.Sprintf("kind: ImageUpdater\nmetadata: {name: u, namespace: ns%d}\nspec:\n  applicationRefs:\n", n)
		for r := range 10 {
			doc += fmt.Sprintf("  - namePattern: \"app%d-*\"\n    images: [{alias: web, imageName: \"ghcr.io/acme/web%d:^1\"}]\n", r, r)
		}
		s.Apply(parse(b, doc), nil)
		for a := range 100 {
			list = append(list, app(fmt.Sprintf("ns%d", n), fmt.Sprintf("app%d-%d", a%10, a), nil))
		}
	}
	w := &StatusWriter{Set: s, Apps: indexed(list)}
	b.ResetTimer()
	for b.Loop() {
		if o := w.observe()["ns0/u"]; o.apps != 100 {
			b.Fatalf("observed %+v", o)
		}
	}
}

// BenchmarkMatch is the reconciler's hook for one Application.
func BenchmarkMatch(b *testing.B) {
	s := newSet(b, shop)
	a := app("team-a", "shop-web", nil)
	for b.Loop() {
		if _, _, ok := s.Match(b.Context(), a); !ok {
			b.Fatal("no match")
		}
	}
}

// byKey is an AppLister with the engine's map lookup.
type byKey struct {
	keys []string
	m    map[string]*watcher.App
}

func indexed(list apps) *byKey {
	b := &byKey{m: map[string]*watcher.App{}}
	for _, a := range list {
		b.keys = append(b.keys, a.Key())
		b.m[a.Key()] = a
	}
	return b
}

func (b *byKey) AppKeys() []string               { return b.keys }
func (b *byKey) AppView(key string) *watcher.App { return b.m[key] }
