package controller

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	gitwb "github.com/crowsnest-dev/crowsnest/writeback/git"
)

// describeTimeout bounds the lookups of one reconcile's new images for a
// pull request body: they are only shown, so a slow registry delays the
// write by at most this much.
const describeTimeout = 30 * time.Second

// describe completes, for a pull-request write-back, the source revision
// and repository of chs's images (the Git writes of changes) that
// selection did not read (a policy that needs no metadata): one Metadata
// lookup per image, with the registry client, and so the credentials,
// that selected it; an image selection described costs nothing. A failed
// lookup leaves them empty and the write goes on. A push is left as it
// is: nothing shows them.
func (r *ImageReconciler) describe(ctx context.Context, key string, spec *imageupdate.Spec, changes []imageupdate.Change, chs []gitwb.Change) {
	if spec.WriteBack.PullRequest == nil || !slices.ContainsFunc(changes, func(c imageupdate.Change) bool { return !c.Described }) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	for i := range changes {
		c := &changes[i]
		j := slices.IndexFunc(spec.Images, func(img imageupdate.Image) bool { return img.Alias == c.Alias })
		if c.Described || j < 0 {
			continue
		}
		img := &spec.Images[j]
		client := r.clientFor(img)
		if client == nil {
			continue
		}
		tag, _, _ := strings.Cut(c.To, "@")
		md, err := client.Metadata(ctx, img.Ref.Repository, tag, nil)
		if err != nil {
			r.Log.Debug("image source not read; the pull request goes without it", "app", key, "image", c.Alias, "tag", tag, "error", err)
			continue
		}
		for k := range chs {
			for l := range chs[k].Images {
				if im := &chs[k].Images[l]; im.Alias == c.Alias {
					im.Revision, im.Source = md.Revision, md.Source
				}
			}
		}
	}
}
