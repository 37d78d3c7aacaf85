# crowsnest's container image for people who build with Docker:
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(git describe --tags --always) -t crowsnest .
# CI builds the same image without Docker (`make image`, hack/image); a test
# in hack/image keeps this file's user, entrypoint and binary path in step
# with that build.
ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOAMD64=v1 GOARM64=v8.0 \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
    -o /out/crowsnest ./cmd/crowsnest

# Static binary, no shell: distroless static ships the nonroot user 65532,
# CA certificates and /tmp, like the image hack/image builds.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=
LABEL org.opencontainers.image.title="crowsnest" \
      org.opencontainers.image.source="https://github.com/crowsnest-dev/crowsnest" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
COPY --from=build /out/crowsnest /usr/local/bin/crowsnest
USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 8080/tcp 8081/tcp 8082/tcp
ENTRYPOINT ["/usr/local/bin/crowsnest"]
CMD ["run"]
