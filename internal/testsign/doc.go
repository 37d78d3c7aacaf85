// Package testsign signs test images the way `cosign sign --key` does,
// with sigstore's own signing code (github.com/sigstore/sigstore, a
// dependency of tests only: no package of the daemon imports this one),
// and stores the signatures in a test registry under cosign's
// "sha256-<hex>.sig" tag or as an OCI 1.1 referrer.
package testsign
