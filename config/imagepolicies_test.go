package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestImagePolicyErrorsNameTheField(t *testing.T) {
	const pol = header + "imagePolicies:\n"
	tests := []struct {
		name string
		doc  string
		want []FieldError
	}{
		{name: "no name", doc: pol + "  - match: {applications: [a]}\n    images: [{image: nginx}]\n",
			want: []FieldError{{Path: "imagePolicies[0].name", Line: 4, Msg: "required"}}},
		{name: "duplicate name", doc: pol + "  - {name: a, match: {projects: [p]}, images: [{image: nginx}]}\n  - {name: a, match: {projects: [p]}, images: [{image: nginx}]}\n",
			want: []FieldError{{Path: "imagePolicies[1].name", Line: 5, Msg: `"a" is used by another policy`}}},
		{name: "no selector", doc: pol + "  - {name: a, images: [{image: nginx}]}\n",
			want: []FieldError{{Path: "imagePolicies[0].match", Line: 4, Msg: "set at least one of"}}},
		{name: "bad glob", doc: pol + "  - {name: a, match: {applications: [\"{a,b\"]}, images: [{image: nginx}]}\n",
			want: []FieldError{{Path: "imagePolicies[0].match.applications[0]", Line: 4, Msg: ""}}},
		{name: "bad selector", doc: pol + "  - {name: a, match: {labelSelector: 'a in (b'}, images: [{image: nginx}]}\n",
			want: []FieldError{{Path: "imagePolicies[0].match.labelSelector", Line: 4, Msg: "invalid label selector"}}},
		{name: "no images and a bad method", doc: pol + "  - {name: a, match: {projects: [p]}, writeBack: {method: svn}}\n",
			want: []FieldError{{Path: "imagePolicies[0].images", Line: 4, Msg: "required"},
				{Path: "imagePolicies[0].writeBack.method", Line: 4, Msg: `unsupported value "svn"`}}},
		{name: "unknown key", doc: pol + "  - {name: a, match: {projects: [p]}, images: [{image: nginx, stratgy: semver}]}\n",
			want: []FieldError{{Path: "imagePolicies[0].images[0].stratgy", Line: 4, Msg: "unknown field"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatalf("Parse() = %+v, want an error", c.ImagePolicies)
			}
			if diff := cmp.Diff(tt.want, gotFieldErrors(t, err, tt.want)); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nfull error:\n%v", diff, err)
			}
		})
	}
}

// The example config documents image policies in a commented block; it
// must load as written once uncommented.
func TestExampleImagePoliciesLoad(t *testing.T) {
	block := commentedExample(t, "imagePolicies")
	c, err := Parse([]byte(header + block))
	if err != nil {
		t.Fatalf("example image policies:\n%s\n%v", block, err)
	}
	if len(c.ImagePolicies) != 1 || c.ImagePolicies[0].Name != "payments-web" || len(c.ImagePolicies[0].Images) != 1 {
		t.Errorf("example policies = %+v", c.ImagePolicies)
	}
}
