package faults

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crowsnest-dev/crowsnest/internal/testreg"
)

// kubeApp is a Kubernetes-mode Application of local mode (patched in
// memory) that lists images as "alias=image:^1", each running 1.0.0.
func kubeApp(ns, name string, images map[string]string) appFile {
	aliases := make([]string, 0, len(images))
	for a := range images {
		aliases = append(aliases, a)
	}
	slices.Sort(aliases)
	list := make([]string, len(aliases))
	running := make([]string, len(aliases))
	for i, a := range aliases {
		list[i] = a + "=" + images[a] + ":^1"
		running[i] = images[a] + ":1.0.0"
	}
	return appFile{ns: ns, name: name, annotations: map[string]string{annImageList: strings.Join(list, ", ")},
		source: "{repoURL: https://git.example.invalid/" + name + ".git, path: deploy}", running: running}
}

// updated reports whether app's Events say image went from 1.0.0 to to.
func updated(evs []logEvent, app, image, to string) bool {
	return slices.ContainsFunc(eventsOf(evs, app, "ImagesUpdated"), func(e logEvent) bool {
		return strings.Contains(e.Message, image+": 1.0.0 -> "+to)
	})
}

// firstMessage is the first of evs (Warnings, usually) for the table:
// its reason and its message around the first of needles it holds.
func firstMessage(evs []logEvent, needles ...string) string {
	if len(evs) == 0 {
		return "(no Warning)"
	}
	msg := evs[0].Message
	for _, n := range needles {
		if strings.Contains(msg, n) {
			return evs[0].Reason + ": " + excerpt(msg, n, 200)
		}
	}
	return evs[0].Reason + ": " + shorten(msg, 200)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// excerpt is the part of s around needle (its end when needle is not
// in it), for errors whose point comes late.
func excerpt(s, needle string, n int) string {
	i := strings.Index(s, needle)
	if i < 0 {
		i = len(s)
	}
	from := max(0, min(i-n/2, len(s)-n))
	if from == 0 {
		return shorten(s, n)
	}
	return "..." + shorten(s[from:], n)
}

// A registry whose tag list's next-page link leads back to a page already
// read: the listing ends with an error naming the loop after a few
// requests instead of running on, the Application's other image is still
// updated, and --once fails.
func TestHostileTagListLinkLoop(t *testing.T) {
	hostileTest(t)
	v := newVerdict(t, "registry: tag-list Link header loops",
		"every page of a repository's tag list links (Link: rel=next) back to the same page")
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	loop := pushImage(t, reg, "team/loop", "1.0.0", "1.1.0")
	ok := pushImage(t, reg, "team/ok", "1.0.0", "1.1.0")
	var lists atomic.Int64
	reg.SetFault(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/team/loop/tags/list") {
			return false
		}
		lists.Add(1)
		w.Header().Set("Link", `</v2/team/loop/tags/list?last=1.0.0&n=1>; rel="next"`)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprint(w, `{"name":"team/loop","tags":["1.0.0"]}`)
		return true
	})
	dir := writeApps(t, kubeApp("ci", "web", map[string]string{"loop": loop, "ok": ok}),
		kubeApp("ci", "api", map[string]string{"ok": ok}))
	p, code := runOnce(t, dir, onceOptions{})
	evs := p.events()
	warn := warnings(evs, "ci/web")
	v.answer("exit %d; %s; %d tag-list requests", code, firstMessage(warn), lists.Load())
	v.expect(code == 1, "run --once exit code %d, want 1", code)
	v.expect(slices.ContainsFunc(warn, func(e logEvent) bool { return strings.Contains(e.Message, "tag list pages loop") }),
		"no Warning on ci/web naming the loop: %v", warn)
	v.expect(lists.Load() <= 20, "%d tag-list requests: the listing did not stop", lists.Load())
	lost := 0
	for _, app := range []string{"ci/web", "ci/api"} {
		if !updated(evs, app, ok, "1.1.0") {
			lost++
		}
	}
	v.lose(lost, "%d Applications' healthy image not updated", lost)
	v.credited(append(foreignEvents(evs, "ci/web", "team/loop"), warnings(evs, "ci/api")...))
	v.done()
}

// One Application lists 5,000 images (each a repository of its own): it
// is refused with one error naming the cap, the registry is not asked
// about thousands of repositories, and the other Application of the pass
// is updated.
func TestHostileThousandsOfImages(t *testing.T) {
	hostileTest(t)
	const n = 5000
	v := newVerdict(t, "limits: one Application with thousands of images",
		fmt.Sprintf("image-list with %d entries, each a repository of its own", n))
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	ok := pushImage(t, reg, "team/ok", "1.0.0", "1.1.0")
	list := make([]string, n)
	for i := range list {
		list[i] = fmt.Sprintf("i%04d=%s/team/img-%04d:^1", i, reg.Host(), i)
	}
	many := appFile{ns: "ci", name: "many", annotations: map[string]string{annImageList: strings.Join(list, ",")},
		source: "{repoURL: https://git.example.invalid/many.git, path: deploy}"}
	dir := writeApps(t, many, kubeApp("ci", "web", map[string]string{"ok": ok}))
	p, code := runOnce(t, dir, onceOptions{})
	evs := p.events()
	warn := warnings(evs, "ci/many")
	asked := reg.Count("list", "/team/img-")
	cpu, rss := p.usage()
	v.answer("exit %d; %s; %d of the %d repositories asked for tags; %s CPU, %d MiB peak", code, firstMessage(warn), asked, n,
		cpu.Round(10e6), rss>>10)
	v.expect(code == 1, "run --once exit code %d, want 1", code)
	v.expect(slices.ContainsFunc(warn, func(e logEvent) bool {
		return strings.Contains(e.Message, fmt.Sprint(n)) && strings.Contains(e.Message, "200")
	}), "no Warning on ci/many naming the count and the cap: %v", warn)
	v.expect(asked <= 200, "%d repositories asked for tags, want at most the cap (200)", asked)
	v.loseUnless(updated(evs, "ci/web", ok, "1.1.0"), "ci/web was not updated")
	v.credited(append(foreignEvents(evs, "ci/many", "image-list"), warnings(evs, "ci/web")...))
	v.done()
}

// --once is honest about the folder: an Application file that cannot be
// read, and an annotation whose value is not a string, each fail the pass
// (exit 1) with a closing error naming the file, while what can be read is
// still updated.
func TestHostileOnceHonesty(t *testing.T) {
	hostileTest(t)
	reg := testreg.StartOCI(t, testreg.OCIOptions{})
	web := pushImage(t, reg, "team/web", "1.0.0", "1.1.0")
	for _, tc := range []struct {
		attack, tried string
		// prepare adds the hostile file to dir (web.yaml is there).
		prepare func(t *testing.T, dir string)
		file    string
		// closing are the parts the closing error must name.
		closing []string
		// owner is the Application the problem belongs to ("" none);
		// marker is what names the problem in an Event.
		owner, marker string
	}{{
		attack: "--once honesty: unreadable Application file",
		tried:  "broken.yaml is a symbolic link to itself (cannot be read) beside a good web.yaml",
		prepare: func(t *testing.T, dir string) {
			t.Helper()
			if err := os.Symlink("broken.yaml", filepath.Join(dir, "broken.yaml")); err != nil {
				t.Fatal(err)
			}
		},
		file:    "broken.yaml",
		closing: []string{"broken.yaml"},
		marker:  "broken.yaml",
	}, {
		attack: "--once honesty: annotation value that is not a string",
		tried:  "force-update: true (a YAML bool, unquoted) in web.yaml",
		prepare: func(t *testing.T, dir string) {
			t.Helper()
			a := kubeApp("ci", "web", map[string]string{"web": web})
			a.raw = annForceUpdate + ": true"
			writeTestFile(t, filepath.Join(dir, "web.yaml"), a.String())
		},
		file:    "web.yaml",
		closing: []string{"web.yaml", annForceUpdate},
		owner:   "ci/web",
		marker:  annForceUpdate,
	}} {
		t.Run(tc.attack, func(t *testing.T) {
			t.Parallel()
			v := newVerdict(t, tc.attack, tc.tried)
			dir := t.TempDir()
			writeTestFile(t, filepath.Join(dir, "web.yaml"), kubeApp("ci", "web", map[string]string{"web": web}).String())
			tc.prepare(t, dir)
			p, code := runOnce(t, dir, onceOptions{})
			closing := p.closing()
			v.answer("exit %d: %s", code, shorten(strings.ReplaceAll(closing, dir+string(filepath.Separator), ""), 220))
			v.expect(code == 1, "run --once exit code %d, want 1", code)
			v.expect(containsAll(closing, tc.closing), "the closing error does not name %q: %q", tc.closing, closing)
			v.expect(p.count(`"msg":"application file problem"`, filepath.Join(dir, tc.file)) > 0, "no warning names %s", tc.file)
			evs := p.events()
			v.loseUnless(updated(evs, "ci/web", web, "1.1.0"), "ci/web (readable) was not updated")
			// The problem is blamed on nobody else than its owner.
			v.credited(foreignEvents(evs, tc.owner, tc.marker))
			v.done()
		})
	}
}
