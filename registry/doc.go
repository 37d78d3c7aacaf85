// Package registry talks to OCI registries for crowsnest: it parses image
// references, lists tags and reads manifests with go-containerregistry
// (with credentials, per-registry rate limits, retries and caches so one
// list request serves every Application that uses a repository), polls the
// repositories in use, receives registry webhooks that mark a repository
// for refresh, and picks the version to deploy. Selection is a pure
// function of tags, metadata and a policy; all I/O lives in Client.
package registry
