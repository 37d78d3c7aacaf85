// Package policy picks the version to deploy from a repository's tags: the
// update strategies (semver, newest-build, digest, alphabetical), the
// extract regexp with its orderings, tag filters and platform filters.
// Everything here is a pure function of tags, metadata and a compiled
// Policy; metadata is asked for lazily and only when a policy needs it.
package policy
