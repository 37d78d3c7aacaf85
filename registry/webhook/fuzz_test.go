package webhook

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/crowsnest-dev/crowsnest/registry"
)

var fuzzTypes = []SourceType{DockerHub, GHCR, Harbor, Quay, Distribution, Generic}

// FuzzParse feeds any body to every parser: none may panic, and whatever
// they accept must be a normalised repository and valid tags.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for i := range fuzzTypes {
			f.Add(uint8(i), data)
		}
	}
	f.Add(uint8(4), []byte(`{"events":[{"action":"push","target":{"repository":"a","tag":"t"},"request":{"host":"h:1"}}]}`))
	f.Fuzz(func(t *testing.T, typ uint8, body []byte) {
		src := &Source{Type: fuzzTypes[int(typ)%len(fuzzTypes)]}
		h := http.Header{"X-Github-Event": {"package"}}
		events, err := parse(src, h, body)
		if err != nil {
			return
		}
		for _, ev := range events {
			repo, err := registry.ParseRepo(ev.Repository)
			if err != nil {
				t.Fatalf("accepted repository %q does not parse: %v", ev.Repository, err)
			}
			if key := registry.RepoKey(repo); key != ev.Repository {
				t.Fatalf("repository %q is not normalised (%q)", ev.Repository, key)
			}
			for _, tag := range ev.Tags {
				if !tagPattern.MatchString(tag) {
					t.Fatalf("accepted invalid tag %q", tag)
				}
			}
		}
	})
}
