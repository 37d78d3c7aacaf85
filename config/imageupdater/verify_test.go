package imageupdater

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// imagesVerification is merged field by field, spec then applicationRef
// then image; a useAnnotations applicationRef reads only its own block.
func TestVerificationMerge(t *testing.T) {
	const key = `cosignKey: {secretName: cosign, key: cosign.pub}`
	tests := []struct {
		name, spec string
		// want is, per rule path and alias ("" for a useAnnotations
		// rule), the key in force; a missing entry is no verification.
		want     map[string]*VerifyKey
		problems []string
	}{
		{
			name: "spec block, image override of enabled only",
			spec: `
imagesVerification: {` + key + `}
applicationRefs:
- namePattern: a
  images:
  - {alias: signed, imageName: nginx}
  - {alias: off, imageName: redis, imagesVerification: {enabled: false}}`,
			want: map[string]*VerifyKey{"spec.applicationRefs[0]/signed": {Path: "spec.imagesVerification", SecretName: "cosign", Key: "cosign.pub",
				SecretPath: "spec.imagesVerification.cosignKey.secretName", KeyPath: "spec.imagesVerification.cosignKey.key"}},
		},
		{
			name: "ref off, image on again keeps the spec's key; image's own key wins",
			spec: `
imagesVerification: {` + key + `}
applicationRefs:
- namePattern: a
  imagesVerification: {enabled: false}
  images:
  - {alias: off, imageName: nginx}
  - {alias: inherit, imageName: redis, imagesVerification: {enabled: true}}
  - {alias: own, imageName: busybox, imagesVerification: {cosignKey: {secretName: mine, key: k.pub}}}`,
			want: map[string]*VerifyKey{
				"spec.applicationRefs[0]/inherit": {Path: "spec.applicationRefs[0].images[1].imagesVerification", SecretName: "cosign", Key: "cosign.pub",
					SecretPath: "spec.imagesVerification.cosignKey.secretName", KeyPath: "spec.imagesVerification.cosignKey.key"},
				"spec.applicationRefs[0]/own": {Path: "spec.applicationRefs[0].images[2].imagesVerification", SecretName: "mine", Key: "k.pub",
					SecretPath: "spec.applicationRefs[0].images[2].imagesVerification.cosignKey.secretName",
					KeyPath:    "spec.applicationRefs[0].images[2].imagesVerification.cosignKey.key"},
			},
		},
		{
			name: "useAnnotations reads only the applicationRef's block",
			spec: `
imagesVerification: {` + key + `}
applicationRefs:
- namePattern: a
  useAnnotations: true
- namePattern: b
  useAnnotations: true
  imagesVerification: {cosignKey: {secretName: refkey, key: k.pub}}`,
			want: map[string]*VerifyKey{"spec.applicationRefs[1]/": {Path: "spec.applicationRefs[1].imagesVerification", SecretName: "refkey", Key: "k.pub",
				SecretPath: "spec.applicationRefs[1].imagesVerification.cosignKey.secretName", KeyPath: "spec.applicationRefs[1].imagesVerification.cosignKey.key"}},
		},
		{
			name: "on without a key, a key without a name: not updated, the field named",
			spec: `
applicationRefs:
- namePattern: a
  images:
  - {alias: nokey, imageName: nginx, imagesVerification: {enabled: true}}
  - {alias: noname, imageName: redis, imagesVerification: {cosignKey: {key: k.pub}}}
  - {alias: nokeyname, imageName: busybox, imagesVerification: {cosignKey: {secretName: s}}}
- namePattern: b
  useAnnotations: true
  imagesVerification: {cosignKey: {secretName: "Bad_Name", key: k.pub}}`,
			problems: []string{
				"spec.applicationRefs[0].images[0].imagesVerification: signature verification is on and no cosignKey",
				"spec.applicationRefs[0].images[1].imagesVerification.cosignKey.secretName: required",
				"spec.applicationRefs[0].images[2].imagesVerification.cosignKey.key: required",
				`spec.applicationRefs[1].imagesVerification.cosignKey.secretName: "Bad_Name" is not a Secret name`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "kind: ImageUpdater\nmetadata: {name: u, namespace: n}\nspec:\n" + indent(strings.TrimPrefix(tt.spec, "\n"), "  ") + "\n"
			u, err := Parse([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			rules, problems := u.Rules()
			got := map[string]*VerifyKey{}
			for _, r := range rules {
				if r.Verify != nil {
					got[r.Path+"/"] = r.Verify
				}
				for _, img := range r.Images {
					if img.Verify != nil {
						got[r.Path+"/"+img.Alias] = img.Verify
					}
				}
			}
			if d := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("keys in force (-want +got):\n%s", d)
			}
			if len(problems) != len(tt.problems) {
				t.Fatalf("got %d problems, want %d: %v", len(problems), len(tt.problems), problems)
			}
			for i := range problems {
				if !strings.HasPrefix(problems[i].Error(), tt.problems[i]) {
					t.Errorf("problem %d = %q, want prefix %q", i, problems[i].Error(), tt.problems[i])
				}
			}
		})
	}
}
