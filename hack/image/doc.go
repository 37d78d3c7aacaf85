// Command image builds crowsnest's container image without a Docker
// daemon: it cross-compiles ./cmd/crowsnest for each platform (static,
// CGO off, -trimpath), puts each binary on a small distroless-like
// filesystem (passwd entry for the non-root user 65532, CA certificates,
// /tmp) and writes a multi-arch OCI image index to an OCI layout folder
// and/or pushes it to a registry. The image contract (user, entrypoint,
// binary path, ports) lives in spec.go; the Dockerfile at the repository
// root follows the same contract and a test keeps the two in step.
//
//	go run ./hack/image -out bin/image -version v1.2.3 [-push registry.example.com/crowsnest:v1.2.3]
package main
