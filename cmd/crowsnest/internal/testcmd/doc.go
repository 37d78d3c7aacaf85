// Package testcmd is `crowsnest test IMAGE`: its flags, and the printing
// of the selection dry run internal/imagecheck makes (the registry side
// the daemon builds and the policy package's selection, every candidate
// and the tag chosen). cmd/crowsnest adds the command to its root; Report
// is its -o json output.
package testcmd
