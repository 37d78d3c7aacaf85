package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crowsnest-dev/crowsnest/controller/imageupdate"
	"github.com/crowsnest-dev/crowsnest/registry"
	"github.com/crowsnest-dev/crowsnest/registry/policy"
)

// Which tag each image of a Spec takes: tag lists from the registry
// clients' shared caches, selected by the image's policy.

// selectAll runs selection for every image; errors stay per image.
func (r *ImageReconciler) selectAll(ctx context.Context, key string, spec *imageupdate.Spec) (selections map[string]imageupdate.Selection, waiting bool) {
	var maxAge time.Duration // the tag cache's TTL
	if r.Queue != nil && r.Queue.InFirstPass() {
		maxAge = MaxFirstPass
		if r.tagWaits.wait(ctx, key, r.tagWants(spec), maxAge, r.Queue.Enqueue) {
			return nil, true
		}
	} else {
		r.tagWaits.passOver()
	}
	ctx, cancel := context.WithTimeout(ctx, defaultSelectionTimeout)
	defer cancel()
	out := make(map[string]imageupdate.Selection, len(spec.Images))
	var unverified []string
	defer func() {
		// Said when the skipped tags change; "" forgets it.
		if n := len(unverified); n > maxUnverifiedSaid {
			unverified = append(unverified[:maxUnverifiedSaid], fmt.Sprintf("and %d more", n-maxUnverifiedSaid))
		}
		if what := strings.Join(unverified, "; "); r.newSaid(saidKey{saidUnverified, key}, what) {
			r.keyEvent(key, eventTypeWarning, EventSignatureNotVerified, "tags skipped, their signature not verified: "+what)
		}
	}()
	for i := range spec.Images {
		img := &spec.Images[i]
		pol, err := policy.Compile(img.Ref.Repo(), img.Policy)
		if err != nil {
			out[img.Alias] = imageupdate.Selection{Err: err}
			continue
		}
		client := r.clientFor(img)
		tags, err := client.Tags(ctx, img.Ref.Repository, maxAge)
		if err != nil {
			out[img.Alias] = imageupdate.Selection{Err: err}
			continue
		}
		facts := policy.Facts{Metadata: client.MetadataFunc(img.Ref.Repository, pol.Platforms())}
		if img.Verify != nil {
			facts.Verify = client.VerifyFunc(img.Ref.Repository, img.Verify)
		}
		res, err := r.selections.selectTag(ctx, client, img.Ref.Repo(), img.Policy, pol, tags, facts)
		if err == nil && spec.WriteBack.PinDigest && !res.Pinned {
			// The digest verification checked, when it did.
			res, err = pinDigest(ctx, client, img, res, maxAge)
		}
		out[img.Alias] = imageupdate.Selection{Result: res, Err: err}
		r.Log.Debug("version selected", "app", key, "image", img.Alias, "tag", res.Tag, "error", err)
		for _, c := range res.Unverified {
			// Debug: it repeats every pass; the registry client says it at
			// Info once per digest checked, and the Event below once while
			// the skipped tags stay the same.
			r.Log.Debug("tag skipped: signature not verified", "app", key, "image", img.Alias, "tag", c.Tag, "reason", c.Detail)
			unverified = append(unverified, fmt.Sprintf("%s:%s (%s)", img.Name, c.Tag, c.Detail))
		}
	}
	return out, false
}

// maxUnverifiedSaid bounds the skipped tags one Event names.
const maxUnverifiedSaid = 10

// pinDigest pins res, a tag chosen for an Application whose write-back
// pins digests, to the digest the tag names: the one selection read, or
// the registry's answer to a HEAD, kept as long as the tag list (so a
// steady-state poll costs no request, and a tag pushed again is seen with
// the next tag list).
func pinDigest(ctx context.Context, client *registry.Client, img *imageupdate.Image, res policy.Result, maxAge time.Duration) (policy.Result, error) {
	if res.Digest == "" {
		d, err := client.Digest(ctx, img.Ref.Repository, res.Tag, maxAge)
		if err != nil {
			return res, fmt.Errorf("reading the digest of %s to pin it: %w", res.Tag, err)
		}
		res.Digest = d
	}
	res.Pinned = true
	return res, nil
}

// retryableSelection joins the selection failures of spec's images that
// a later attempt may not repeat. No qualifying tag, a tag list too large
// or whose pages loop, and a policy that does not compile stay as they are until the registry
// or the Application changes, which enqueues the Application anyway.
func retryableSelection(spec *imageupdate.Spec, results map[string]imageupdate.Selection) error {
	var errs []error
	for i := range spec.Images {
		alias := spec.Images[i].Alias
		err := results[alias].Err
		var compile *policy.Error
		if err == nil || errors.Is(err, policy.ErrNoCandidate) || errors.Is(err, registry.ErrTagListTooLarge) || errors.Is(err, registry.ErrTagListLoop) || errors.As(err, &compile) {
			continue
		}
		errs = append(errs, fmt.Errorf("image %s: no version selected: %w", alias, err))
	}
	return errors.Join(errs...)
}

// clientFor is the registry client that reads img: its pull secret's, or
// the shared one.
func (r *ImageReconciler) clientFor(img *imageupdate.Image) *registry.Client {
	if img.PullSecret != "" && r.Registries != nil {
		return r.Registries.ForPullSecret(img.PullSecret)
	}
	return r.Registry
}

// tagWants lists the tag lists spec's images read (an image whose policy
// does not compile reads none).
func (r *ImageReconciler) tagWants(spec *imageupdate.Spec) []tagWant {
	wants := make([]tagWant, 0, len(spec.Images))
	for i := range spec.Images {
		img := &spec.Images[i]
		if _, err := policy.Compile(img.Ref.Repo(), img.Policy); err != nil {
			continue
		}
		wants = append(wants, tagWant{client: r.clientFor(img), repo: img.Ref.Repository})
	}
	return wants
}

// Waiting reports whether a tag list is being read for Applications that
// wait for it off the queue (Engine.Idle).
func (r *ImageReconciler) Waiting() bool {
	return r.tagWaits.pending()
}
