package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// entry is one tag that passed the filters and has a sort key. It is
// kept small: Select holds one per tag.
type entry struct {
	tag string
	key string // extract group or the tag
	v   version
	md  int32 // 1 + index into selection.inspected; 0 when not read
}

// inspection is what selection keeps of a tag's metadata.
type inspection struct {
	digest  string
	created time.Time // counting wanted platforms only
	builtOK bool      // built for a wanted platform
	// revision and source are Metadata's, for Result.
	revision, source string
	// verified says the signature was checked; refused is why it did
	// not pass ("" when it did).
	verified bool
	refused  string
}

// selection is the state of one Select or Explain call.
type selection struct {
	p         *Policy
	ctx       context.Context
	meta      MetadataFunc
	verify    VerifyFunc
	explain   bool
	ranked    []entry
	inspected []inspection
	skipped   []Candidate // explain only: tags skipped before ranking
	tally     tally
	// last is the last version the constraint was checked for, and
	// lastRC its answer: equal versions come out of the ranking together
	// and the check ignores build metadata, so one check serves them all.
	last   *version
	lastRC reasonCode
}

// Select picks the tag to deploy from tags, reading metadata through
// meta only when the policy needs it (see NeedsMetadata) and only for the
// candidates it must inspect, best first. Result.Candidates stays nil;
// use Explain for the full account. Nothing qualifying is ErrNoCandidate
// (wrapped); a metadata error or a cancelled ctx stops the walk and is
// returned wrapped. For the digest strategy tags may be nil: the tracked
// tag is then looked up directly.
func (p *Policy) Select(ctx context.Context, tags []string, meta MetadataFunc) (Result, error) {
	return p.SelectWith(ctx, tags, Facts{Metadata: meta})
}

// SelectWith is Select with every lookup selection may make; with
// facts.Verify set, a tag whose signature does not verify is skipped
// (ReasonUnverified) and listed in Result.Unverified.
func (p *Policy) SelectWith(ctx context.Context, tags []string, facts Facts) (Result, error) {
	s := selection{p: p, ctx: ctx, meta: facts.Metadata, verify: facts.Verify}
	return s.run(tags)
}

// Explain is Select that also lists every tag considered in
// Result.Candidates, best first, with the reason each was kept or
// skipped; `crowsnest test` prints it. On ErrNoCandidate the returned
// Result still holds the candidates.
func (p *Policy) Explain(ctx context.Context, tags []string, meta MetadataFunc) (Result, error) {
	return p.ExplainWith(ctx, tags, Facts{Metadata: meta})
}

// ExplainWith is Explain with every lookup selection may make (see
// SelectWith).
func (p *Policy) ExplainWith(ctx context.Context, tags []string, facts Facts) (Result, error) {
	s := selection{p: p, ctx: ctx, meta: facts.Metadata, verify: facts.Verify, explain: true}
	return s.run(tags)
}

func (s *selection) run(tags []string) (Result, error) {
	p := s.p
	if p.NeedsMetadata() && s.meta == nil {
		return Result{}, fmt.Errorf("image %q: the %s policy needs metadata, but no lookup was given", p.image, p.strategy)
	}
	if s.verify != nil && s.meta == nil {
		return Result{}, fmt.Errorf("image %q: verifying signatures needs digests, but no metadata lookup was given", p.image)
	}
	if p.strategy == StrategyDigest {
		return s.digest(tags)
	}
	s.ranked = make([]entry, 0, len(tags))
	for _, tag := range tags {
		e := entry{tag: tag}
		rc := p.filter(tag)
		if rc == rcNone {
			rc = p.prepare(&e)
		}
		if rc != rcNone {
			s.skip(&e, rc)
			continue
		}
		s.ranked = append(s.ranked, e)
	}
	if p.strategy == StrategyNewestBuild {
		// Ranking needs every candidate's created time.
		for i := range s.ranked {
			if err := s.inspect(&s.ranked[i]); err != nil {
				return Result{}, err
			}
		}
	}
	return s.walk(len(tags))
}

// prepare computes e's sort key, or why it has none.
func (p *Policy) prepare(e *entry) reasonCode {
	key, ok := p.key(e.tag)
	if !ok {
		return rcNoExtractMatch
	}
	e.key = key
	switch p.order {
	case OrderSemver:
		if e.v, ok = parseVersion(key); !ok {
			return rcNotSemver
		}
	case OrderNumeric:
		if !allDigits(key) {
			return rcNotNumeric
		}
	}
	return rcNone
}

// skip records a tag dropped before ranking.
func (s *selection) skip(e *entry, rc reasonCode) {
	s.tally[rc]++
	if s.explain {
		s.skipped = append(s.skipped, s.candidate(e, rc))
	}
}

func (s *selection) candidate(e *entry, rc reasonCode) Candidate {
	c := Candidate{Tag: e.tag, Reason: reasons[rc]}
	if e.md > 0 {
		c.Created = s.inspected[e.md-1].created
		if rc == rcUnverified {
			c.Detail = s.inspected[e.md-1].refused
		}
	}
	if rc == rcInvalidTag || rc == rcNotSemver || rc == rcNotNumeric || rc == rcNoExtractMatch || rc == rcNotAllowed || rc == rcIgnored {
		return c
	}
	c.Version = s.p.display(e)
	return c
}

// display is e's sort key as users read it.
func (p *Policy) display(e *entry) string {
	switch p.order {
	case OrderSemver:
		return e.v.String()
	case OrderNumeric, OrderLexical:
		return e.key
	}
	return ""
}

// walk takes candidates best first until one qualifies (Select) or
// through all of them (Explain).
func (s *selection) walk(total int) (Result, error) {
	var res Result
	if !s.explain && len(s.ranked) > 0 {
		// Usually the best candidate qualifies: find it in one pass and
		// rank the rest only if it does not.
		best := &s.ranked[0]
		for i := 1; i < len(s.ranked); i++ {
			if s.better(&s.ranked[i], best) {
				best = &s.ranked[i]
			}
		}
		rc, err := s.verdict(best, false)
		if err != nil {
			return Result{}, err
		}
		if rc == rcNone {
			s.win(&res, best)
			return res, nil
		}
		// Not counted: the walk below meets it again, without new checks
		// or lookups (qualify and inspect remember it).
	}
	found := false
	h := rankHeap{entries: s.ranked, better: s.better}
	h.init()
	for h.len() > 0 {
		e := &s.ranked[h.pop()]
		rc, err := s.verdict(e, found)
		if err != nil {
			return Result{}, err
		}
		if rc == rcNone {
			rc, found = rcSelected, true
			s.win(&res, e)
		} else {
			s.tally[rc]++
		}
		if rc == rcUnverified {
			res.Unverified = append(res.Unverified, s.candidate(e, rc))
		}
		if s.explain {
			res.Candidates = append(res.Candidates, s.candidate(e, rc))
		} else if found {
			break
		}
	}
	if s.explain {
		slices.SortStableFunc(s.skipped, func(a, b Candidate) int { return strings.Compare(b.Tag, a.Tag) })
		res.Candidates = append(res.Candidates, s.skipped...)
	}
	if !found {
		return res, noCandidate(s.p.image, total, &s.tally)
	}
	return res, nil
}

// verdict decides one candidate taken best first; found says a better
// one was already selected, so no metadata is read for this one.
func (s *selection) verdict(e *entry, found bool) (reasonCode, error) {
	rc := s.qualify(e)
	// Below the winner, only metadata already read is shown.
	if rc == rcNone && len(s.p.platforms) > 0 && (e.md > 0 || !found) {
		if e.md == 0 {
			if err := s.inspect(e); err != nil {
				return rcNone, err
			}
		}
		if !s.inspected[e.md-1].builtOK {
			rc = rcPlatform
		}
	}
	if rc == rcNone && s.verify != nil && !found {
		if rc, err := s.check(e); err != nil || rc != rcNone {
			return rc, err
		}
	}
	if rc == rcNone && found {
		rc = rcOutranked
	}
	return rc, nil
}

// check verifies e's signature, once per selection: the digest comes
// from its metadata.
func (s *selection) check(e *entry) (reasonCode, error) {
	if e.md == 0 {
		if err := s.inspect(e); err != nil {
			return rcNone, err
		}
	}
	in := &s.inspected[e.md-1]
	if !in.verified {
		if in.digest == "" {
			return rcNone, fmt.Errorf("image %q: verifying tag %q: %w", s.p.image, e.tag, errNoDigest)
		}
		refused, err := s.verify(s.ctx, in.digest)
		if err != nil {
			return rcNone, fmt.Errorf("image %q: verifying tag %q: %w", s.p.image, e.tag, err)
		}
		in.verified, in.refused = true, refused
	}
	if in.refused != "" {
		return rcUnverified, nil
	}
	return rcNone, nil
}

// win records e as the selected tag.
func (s *selection) win(res *Result, e *entry) {
	s.tally[rcSelected]++
	res.Tag, res.Version = e.tag, s.p.display(e)
	if e.md > 0 {
		in := &s.inspected[e.md-1]
		res.Digest, res.Revision, res.Source = in.digest, in.revision, in.source
	}
}

// qualify applies the constraint, which needs the library's Version, so
// it runs only on candidates the walk reaches.
func (s *selection) qualify(e *entry) reasonCode {
	p := s.p
	switch {
	case p.order != OrderSemver:
		return rcNone
	case p.constraint == nil && e.v.pre != "":
		return rcPrerelease
	case p.constraint == nil:
		return rcNone
	case s.last != nil && s.last.compare(&e.v) == 0:
		return s.lastRC
	}
	sv := e.v.semver(e.key)
	rc := rcConstraint
	switch {
	case p.constraint.Check(sv):
		rc = rcNone
	case e.v.pre != "" && p.withPre.Check(sv):
		rc = rcPrerelease
	}
	s.last, s.lastRC = &e.v, rc
	return rc
}

// better orders candidates best first: by the sort key (created time for
// newest-build), ties by tag, the lexically greater first.
func (s *selection) better(a, b *entry) bool {
	p := s.p
	var c int
	switch {
	case p.strategy == StrategyNewestBuild:
		c = s.inspected[a.md-1].created.Compare(s.inspected[b.md-1].created)
	case p.order == OrderSemver:
		c = a.v.compare(&b.v)
	case p.order == OrderNumeric:
		c = compareNumeric(a.key, b.key)
	default:
		c = strings.Compare(a.key, b.key)
	}
	if c == 0 {
		c = strings.Compare(a.tag, b.tag)
	}
	return c > 0
}

// inspect reads e's metadata: digest, created time (wanted platforms
// only) and whether it is built for a wanted platform.
func (s *selection) inspect(e *entry) error {
	if err := s.ctx.Err(); err != nil {
		return fmt.Errorf("image %q: selecting a tag: %w", s.p.image, err)
	}
	md, err := s.meta(s.ctx, e.tag)
	if err != nil {
		return fmt.Errorf("image %q: reading metadata of tag %q: %w", s.p.image, e.tag, err)
	}
	s.inspected = append(s.inspected, inspection{
		digest:   md.Digest,
		created:  createdFor(s.p.platforms, md),
		builtOK:  builtForAny(s.p.platforms, md),
		revision: md.Revision,
		source:   md.Source,
	})
	e.md = int32(len(s.inspected))
	return nil
}

// digest resolves the tracked tag to its digest.
func (s *selection) digest(tags []string) (Result, error) {
	e := entry{tag: s.p.spec.Constraint}
	rc := rcSelected
	if tags != nil && !slices.Contains(tags, e.tag) {
		rc = rcNotFound
	} else {
		if err := s.inspect(&e); err != nil {
			return Result{}, err
		}
		if s.inspected[0].digest == "" {
			return Result{}, fmt.Errorf("image %q: reading metadata of tag %q: %w", s.p.image, e.tag, errNoDigest)
		}
		if !s.inspected[0].builtOK {
			rc = rcPlatform
		} else if s.verify != nil {
			vrc, err := s.check(&e)
			if err != nil {
				return Result{}, err
			}
			if vrc != rcNone {
				rc = vrc
			}
		}
	}
	s.tally[rc]++
	var res Result
	if s.explain {
		res.Candidates = []Candidate{s.candidate(&e, rc)}
	}
	if rc == rcUnverified {
		res.Unverified = []Candidate{s.candidate(&e, rc)}
	}
	if rc != rcSelected {
		return res, noCandidate(s.p.image, 1, &s.tally)
	}
	in := &s.inspected[0]
	res.Tag, res.Digest, res.Pinned = e.tag, in.digest, true
	res.Revision, res.Source = in.revision, in.source
	return res, nil
}

var errNoDigest = errors.New("no digest")
