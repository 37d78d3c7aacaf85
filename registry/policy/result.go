package policy

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNoCandidate means no tag passed the policy. Select wraps it with the
// image and a count of tags per reason.
var ErrNoCandidate = errors.New("no tag qualifies")

// Result is the outcome of a selection.
type Result struct {
	// Tag is the winner.
	Tag string
	// Version is the winner's sort key as shown to users: the canonical
	// semver, the extracted value, or the tag; empty for newest-build
	// and digest.
	Version string
	// Digest is the winner's digest, set whenever its metadata was read
	// (always for digest and newest-build, and with platforms).
	Digest string
	// Pinned says the result is deployed by digest (the digest strategy):
	// Ref returns tag@digest.
	Pinned bool
	// Revision and Source are the winner's Metadata.Revision and
	// .Source, set only when its metadata was read (Digest is set).
	Revision, Source string
	// Candidates are the tags considered, best first, each with the
	// reason it was selected or skipped; tags skipped before ranking
	// (filters, extract, unparseable) follow, by tag. Only Explain fills
	// it; Select leaves it nil so the daemon allocates little.
	Candidates []Candidate
	// Unverified are the tags refused because their signature did not
	// verify, best first, with Detail saying why; Select fills it too, so
	// the daemon reports them.
	Unverified []Candidate
}

// Ref is what to deploy: "tag", or "tag@sha256:..." when pinned.
func (r Result) Ref() string {
	if r.Pinned && r.Digest != "" {
		return r.Tag + "@" + r.Digest
	}
	return r.Tag
}

// Candidate is one tag as selection saw it.
type Candidate struct {
	Tag string
	// Version is the sort key shown to users (see Result.Version); empty
	// when the tag was skipped before it had one.
	Version string
	Reason  Reason
	// Created is the image's created time when its metadata was read.
	Created time.Time
	// Detail says more about Reason: why the signature did not verify.
	Detail string
}

// Reason says why a candidate was selected or skipped; tests and
// `crowsnest test` output rely on these values.
type Reason string

// Reasons, in the order ErrNoCandidate's summary lists them.
const (
	ReasonSelected       Reason = "selected"
	ReasonOutranked      Reason = "ranked below the selected tag"
	ReasonInvalidTag     Reason = "not a valid OCI tag"
	ReasonNotAllowed     Reason = "not allowed by allow-tags"
	ReasonIgnored        Reason = "ignored by ignore-tags"
	ReasonNoExtractMatch Reason = "extract did not match"
	ReasonNotSemver      Reason = "not a semantic version"
	ReasonNotNumeric     Reason = "not a number"
	ReasonConstraint     Reason = "outside the constraint"
	ReasonPrerelease     Reason = "prerelease not named by the constraint"
	ReasonPlatform       Reason = "not built for a wanted platform"
	ReasonNotFound       Reason = "tag not in the repository"
	ReasonUnverified     Reason = "signature not verified"
)

// reasonCode is a Reason in one byte, for the per-tag bookkeeping.
type reasonCode uint8

const (
	rcNone reasonCode = iota
	rcSelected
	rcOutranked
	rcInvalidTag
	rcNotAllowed
	rcIgnored
	rcNoExtractMatch
	rcNotSemver
	rcNotNumeric
	rcConstraint
	rcPrerelease
	rcPlatform
	rcNotFound
	rcUnverified
	numReasons
)

var reasons = [numReasons]Reason{
	rcSelected:       ReasonSelected,
	rcOutranked:      ReasonOutranked,
	rcInvalidTag:     ReasonInvalidTag,
	rcNotAllowed:     ReasonNotAllowed,
	rcIgnored:        ReasonIgnored,
	rcNoExtractMatch: ReasonNoExtractMatch,
	rcNotSemver:      ReasonNotSemver,
	rcNotNumeric:     ReasonNotNumeric,
	rcConstraint:     ReasonConstraint,
	rcPrerelease:     ReasonPrerelease,
	rcPlatform:       ReasonPlatform,
	rcNotFound:       ReasonNotFound,
	rcUnverified:     ReasonUnverified,
}

// tally counts skipped tags per reason for ErrNoCandidate's message.
type tally [numReasons]int

// noCandidate wraps ErrNoCandidate: `image "nginx": no tag qualifies
// (3 tags: 2 outside the constraint, 1 not a semantic version)`.
func noCandidate(image string, total int, t *tally) error {
	if total == 0 {
		return fmt.Errorf("image %q: %w (no tags)", image, ErrNoCandidate)
	}
	var parts []string
	for rc, n := range t {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, reasons[rc]))
		}
	}
	return fmt.Errorf("image %q: %w (%d tags: %s)", image, ErrNoCandidate, total, strings.Join(parts, ", "))
}
