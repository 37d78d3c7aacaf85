package webhook

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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

// FuzzReceiver sends arbitrary requests through the mounted receiver: the
// answer is always one of the documented statuses, nothing but an
// authenticated, well-formed push reaches the Listener (authentication comes
// before parsing, so an unauthenticated body is never judged), and what
// reaches it is a normalised repository with valid tags.
func FuzzReceiver(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for i, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for auth := range uint8(4) {
			f.Add(uint8(i), auth, "POST", data)
		}
	}
	f.Add(uint8(5), uint8(1), "POST", []byte(`{"repository":"../../etc","tag":"../x"}`))
	f.Add(uint8(5), uint8(1), "POST", []byte(`{"repository":"ghcr.io/a/b","tag":"1.0\n- evil: true"}`))
	f.Add(uint8(5), uint8(2), "POST", []byte(`{"repository":"ghcr.io/a/b","tag":"`+strings.Repeat("x", 1024)+`"}`))
	f.Add(uint8(0), uint8(0), "GET", []byte(nil))
	f.Add(uint8(2), uint8(3), "POST", []byte(`[[[[[[[[[[[[[[[[[[[[`))
	paths := []string{"dockerhub", "ghcr", "harbor", "quay", "distribution", "generic", "harbor-dr", "nexus"}
	f.Fuzz(func(t *testing.T, which, auth uint8, method string, body []byte) {
		fx := newFixture(t, Config{Sources: allSources(), MaxBodyBytes: 64 << 10})
		name := paths[int(which)%len(paths)]
		target := "/webhooks/registry/" + name
		header := map[string]string{"X-GitHub-Event": "package"}
		good := false
		switch auth % 4 {
		case 1: // the right credential, the way each sender sends it
			good = name != "nexus" && name != "harbor-dr"
			switch name {
			case "ghcr":
				header[GitHubSignatureHeader] = signature(secret, body)
			case "generic":
				header[SignatureHeader] = signature(secret, body)
			case "harbor":
				header["Authorization"] = secret
			default:
				target += "?secret=" + secret
			}
		case 2: // a bearer token, right for all but ghcr
			header["Authorization"] = "Bearer " + secret
			good = name != "nexus" && name != "harbor-dr" && name != "ghcr"
		case 3: // a wrong one
			header["Authorization"] = "Bearer not-" + secret
			header[SignatureHeader] = signature("not-"+secret, body)
		}
		if !validMethod(method) {
			return
		}
		req := httptest.NewRequestWithContext(t.Context(), method, target, bytes.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		fx.mux.ServeHTTP(rec, req)
		switch code := rec.Code; {
		case name == "nexus":
			if code != http.StatusNotFound {
				t.Fatalf("unknown source: %d", code)
			}
		case method != http.MethodPost:
			if code != http.StatusMethodNotAllowed {
				t.Fatalf("%s: %d", method, code)
			}
		case !good:
			if code != http.StatusUnauthorized {
				t.Fatalf("unauthenticated request answered %d, want 401", code)
			}
		case code != http.StatusAccepted && code != http.StatusNoContent && code != http.StatusBadRequest:
			t.Fatalf("authenticated request answered %d", code)
		}
		pushes := fx.pushes.got()
		if (rec.Code == http.StatusAccepted) != (len(pushes) > 0) {
			t.Fatalf("status %d with %d pushes", rec.Code, len(pushes))
		}
		for _, ev := range pushes {
			repo, err := registry.ParseRepo(ev.Repository)
			if err != nil || registry.RepoKey(repo) != ev.Repository {
				t.Fatalf("pushed repository %q is not normalised: %v", ev.Repository, err)
			}
			for _, tag := range ev.Tags {
				if !tagPattern.MatchString(tag) {
					t.Fatalf("pushed invalid tag %q", tag)
				}
			}
		}
	})
}

// validMethod reports whether method can go into a request line.
func validMethod(method string) bool {
	if method == "" {
		return false
	}
	for _, c := range method {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune(`()<>@,;:\"/[]?={}`, c) {
			return false
		}
	}
	return true
}
