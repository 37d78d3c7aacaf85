// Package policy picks the version to deploy from a repository's tags: the
// update strategies (semver, newest-build, digest, alphabetical), the
// extract regexp with its orderings, tag filters and platform filters.
// Everything here is a pure function of tags, metadata and a compiled
// Policy; metadata is asked for lazily and only when a policy needs it.
//
// # Ordering and tie-breaks
//
// Every tag first passes allow-tags, then ignore-tags, then extract (the
// (?P<version>...) group becomes the sort key; without extract the key is
// the whole tag). Keys are ordered by the strategy, or by extract-order
// when given: semver (Masterminds/semver/v3 precedence: a leading "v" and
// missing minor/patch allowed, a release above its prereleases, build
// metadata ignored), numeric (digit strings compared as integers of any
// length, so build-10 > build-9 and leading zeros do not count) or lexical
// (byte order). newest-build orders by the image config's created time,
// counting for a multi-arch index only the children built for a wanted
// platform; unknown (zero) times sort last. Whenever two keys are equal
// ("1.2.3" and "v1.2.3", "1.2" and "1.2.0", "1.0.0+a" and "1.0.0+b", or
// two tags extracting the same number), the lexically greater tag ranks
// first, so "v1.2.3" beats "1.2.3" and the result never depends on the
// order tags were listed in.
//
// # Constraints and platforms
//
// A semver constraint is a Masterminds range; prereleases qualify only
// when the constraint names one, and an empty constraint admits every
// release but no prerelease. Candidates are then taken best first: a
// candidate outside the constraint, or, when platforms are wanted, one
// whose metadata lists none of them ("linux/arm64"
// accepts any variant; unknown platforms never qualify), is skipped for
// the next best. The digest strategy tracks one tag (the constraint) and
// yields tag@digest, the index digest for a multi-arch image.
package policy
