// Package testcmd is `crowsnest test IMAGE`: a dry run of the image
// selection, with the registry side the daemon builds
// (internal/setup) and the policy package's selection,
// which lists the repository's tags and shows each candidate and the tag
// chosen. cmd/crowsnest adds the command to its root; Report is its -o
// json output.
package testcmd
