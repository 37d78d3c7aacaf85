package imageupdate

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// maxAnnotationBytes is the apiserver's limit on an object's annotations
// together (apimachinery's TotalAnnotationSizeLimitB): what a hostile
// annotation author has to work with.
const maxAnnotationBytes = 256 << 10

// imageList is an image-list of n aliased images.
func imageList(n int) string {
	entries := make([]string, n)
	for i := range entries {
		entries[i] = fmt.Sprintf("a%d=ghcr.io/org/img%d", i, i)
	}
	return strings.Join(entries, ",")
}

func annotationBytes(a map[string]string) int {
	n := 0
	for k, v := range a {
		n += len(k) + len(v)
	}
	return n
}

// An image-list over MaxImages is one error naming the annotation and the
// cap, and no image is read (no policy compiles, no registry interests,
// nothing to patch); MaxImages itself is read whole.
func TestImageListCap(t *testing.T) {
	tests := []struct {
		name       string
		n          int
		wantImages int
		wantErrs   []string
	}{
		{name: "at the cap", n: MaxImages, wantImages: MaxImages},
		{name: "one over", n: MaxImages + 1, wantErrs: []string{
			fmt.Sprintf("annotation %simage-list: %d entries, more than the %d an Application may list", Prefix, MaxImages+1, MaxImages)}},
		{name: "5000 images", n: 5000, wantErrs: []string{
			fmt.Sprintf("annotation %simage-list: 5000 entries, more than the %d an Application may list", Prefix, MaxImages)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := map[string]string{Prefix + KeyImageList: imageList(tt.n)}
			for i := range tt.n {
				a[fmt.Sprintf("%sa%d.update-strategy", Prefix, i)] = "semver"
			}
			spec, errs := FromAnnotations(a)
			if spec == nil {
				t.Fatal("nil spec: an Application over the cap must be reported, not treated as unmanaged")
			}
			if len(spec.Images) != tt.wantImages {
				t.Errorf("%d images, want %d", len(spec.Images), tt.wantImages)
			}
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tt.wantErrs, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if len(errs) > 0 && spec.WriteBack.Method != "" {
				t.Errorf("write-back method %q over the cap, want none", spec.WriteBack.Method)
			}
		})
	}
}

// Thousands of unknown keys are a few errors (each becomes an Event and a
// log line), the last one counting the rest.
func TestUnknownKeysAreCapped(t *testing.T) {
	a := map[string]string{Prefix + KeyImageList: "web=nginx"}
	for i := range 1000 {
		a[fmt.Sprintf("%sx%04d.update-strategy", Prefix, i)] = "semver"
	}
	_, errs := FromAnnotations(a)
	if len(errs) != maxUnknownKeys+1 {
		t.Fatalf("%d errors for 1000 unknown keys, want %d", len(errs), maxUnknownKeys+1)
	}
	var last *AnnotationError
	if !errors.As(errs[len(errs)-1], &last) || !strings.HasSuffix(last.Msg, fmt.Sprintf("and %d more unknown keys", 1000-maxUnknownKeys)) {
		t.Errorf("last error = %v, want one counting the other %d keys", errs[len(errs)-1], 1000-maxUnknownKeys)
	}
	if want := Prefix + "x0000.update-strategy"; !strings.HasPrefix(errs[0].Error(), "annotation "+want+": unknown key") {
		t.Errorf("first error = %v, want %s named", errs[0], want)
	}
}

// hostileAnnotations fills the apiserver's annotation limit the way that
// costs the most to read: a MaxImages image-list of long names and the
// rest of the space in settings of aliases it does not declare, each of
// which the unknown-key check looks up in image-list.
func hostileAnnotations() map[string]string {
	entries := make([]string, MaxImages)
	for i := range entries {
		entries[i] = fmt.Sprintf("a%d=ghcr.io/org/%s%d", i, strings.Repeat("x", 200), i)
	}
	a := map[string]string{Prefix + KeyImageList: strings.Join(entries, ",")}
	for i := 0; annotationBytes(a) < maxAnnotationBytes-100; i++ {
		a[fmt.Sprintf("%sb%d.allow-tags", Prefix, i)] = "any"
	}
	return a
}

// BenchmarkFromAnnotationsHostile reads the costliest annotations an
// Application can carry: about 5 ms on a CI core. Reading image-list once
// per key cost six times that, and without MaxImages a 5,000-entry list
// with a setting per alias took over a second.
func BenchmarkFromAnnotationsHostile(b *testing.B) {
	a := hostileAnnotations()
	b.ReportAllocs()
	for b.Loop() {
		FromAnnotations(a)
	}
}

// A tag filter past the policy limits is one error naming its annotation
// and the limit, never quoting the oversized text; only the images it
// reaches are left out.
func TestTagFilterLimits(t *testing.T) {
	long := strings.Repeat("a", 2048)
	tests := []struct {
		name       string
		ann        map[string]string
		wantImages []string
		wantErrs   []string
	}{
		{
			name:       "an image's allow-tags",
			ann:        map[string]string{Prefix + "web.allow-tags": "regexp:" + long},
			wantImages: []string{"api"},
			wantErrs:   []string{Prefix + `web.allow-tags: image "ghcr.io/org/web": allow-tags: 2048 bytes, over the 1024-byte limit`},
		},
		{
			name: "the app-wide ignore-tags",
			ann:  map[string]string{Prefix + KeyIgnoreTags: "x," + long},
			wantErrs: []string{
				Prefix + `ignore-tags: image "ghcr.io/org/web": ignore-tags[1]: 2048 bytes, over the 1024-byte limit`,
				Prefix + `ignore-tags: image "ghcr.io/org/api": ignore-tags[1]: 2048 bytes, over the 1024-byte limit`,
			},
		},
		{
			name:       "65 ignore-tags entries",
			ann:        map[string]string{Prefix + "api.ignore-tags": strings.Repeat("x*,", 64) + "y"},
			wantImages: []string{"web"},
			wantErrs:   []string{Prefix + `api.ignore-tags: image "ghcr.io/org/api": ignore-tags: 65 entries, more than the 64 allowed`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := map[string]string{Prefix + KeyImageList: "web=ghcr.io/org/web,api=ghcr.io/org/api"}
			for k, v := range tt.ann {
				a[k] = v
			}
			spec, errs := FromAnnotations(a)
			var images, got []string
			for _, img := range spec.Images {
				images = append(images, img.Alias)
			}
			for _, err := range errs {
				var ae *AnnotationError
				if !errors.As(err, &ae) {
					t.Fatalf("error %v is no AnnotationError", err)
				}
				got = append(got, ae.Key+": "+ae.Msg)
			}
			if diff := cmp.Diff(tt.wantImages, images); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrs, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// An annotation value an error quotes is cut to a few hundred bytes: the
// error becomes an Event and a log line on every reconcile, and a value
// may fill the 256 KiB an object's annotations may hold.
func TestLongValuesQuotedShort(t *testing.T) {
	long := strings.Repeat("v", 100<<10)
	tests := []struct{ key, value string }{
		{"web." + KeyStrategy, long},
		{"web." + KeyForceUpdate, long},
		{KeyWriteBack, long},
		{KeyWriteTarget, long},
		{KeyGitBranch, "main " + long}, // not a branch name
		{KeyGitRepository, "a " + long},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			a := map[string]string{Prefix + KeyImageList: "web=ghcr.io/org/web", Prefix + tt.key: tt.value}
			_, errs := FromAnnotations(a)
			var got []string
			for _, err := range errs {
				var ae *AnnotationError
				if errors.As(err, &ae) && ae.Key == Prefix+tt.key {
					got = append(got, err.Error())
				}
			}
			if len(got) != 1 {
				t.Fatalf("%d errors naming %s, want one", len(got), tt.key)
			}
			if n := len(got[0]); n > 512 {
				t.Errorf("the error is %d bytes, want at most 512: %s...", n, got[0][:200])
			}
			if want := fmt.Sprintf("... (%d bytes)", len(tt.value)); !strings.Contains(got[0], want) {
				t.Errorf("the error does not say the value's length %s: %.300s", want, got[0])
			}
		})
	}
}
