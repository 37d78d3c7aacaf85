// Package creds turns credential references (pullsecret:, secret:, env:,
// ext:, dockerconfig:) into go-containerregistry authenticators: it reads
// Kubernetes Secrets, environment variables, Docker config files and the
// output of credential scripts, caches the result per reference and
// registry host until it expires or the registry refuses it, and keeps
// every credential out of errors, logs and String output. Without a
// reference access is anonymous; the default keychain is never used
// implicitly.
package creds
