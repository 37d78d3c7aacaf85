// Package imageref parses image references ("ghcr.io/org/app:1.2",
// "nginx@sha256:...") into a repository, a tag and a digest, with Docker
// Hub's defaults applied and the distribution spec's grammar enforced. It
// is the one reader of image references for the pure decision code
// (controller/imageupdate, config readers) and for registry, which hands
// the parsed repository to go-containerregistry; so it imports no registry
// client and no network code.
package imageref
