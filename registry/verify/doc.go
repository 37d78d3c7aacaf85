// Package verify owns cosign signature checks: parsing the public keys an
// operator configures, finding the signatures stored for a manifest
// digest (the OCI referrers of the digest, then cosign's
// "sha256-<hex>.sig" tag) through a small Source the registry client
// implements, and deciding whether one of them was made by a configured
// key over a payload that names that digest. It uses only the standard
// library's crypto and go-containerregistry's types, so an installation
// that verifies nothing links little for it.
package verify
