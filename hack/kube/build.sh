#!/usr/bin/env bash
# Builds etcd, kube-apiserver and kube-controller-manager for crowsnest's test environment from the Go
# module proxy (no prebuilt binary can be downloaded here) and caches them.
#
# The cache folder is keyed by the Kubernetes version and a hash of the two
# wrapper modules, so a change to either rebuilds and a repeated run is a no-op.
# Prints the folder holding the binaries on its last line.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
version=v1.36.3
key=$(cat "$here"/etcd/go.mod "$here"/etcd/go.sum "$here"/etcd/main.go \
          "$here"/apiserver/go.mod "$here"/apiserver/go.sum "$here"/apiserver/main.go \
          "$here"/controller-manager/go.mod "$here"/controller-manager/go.sum "$here"/controller-manager/main.go \
      | sha256sum | cut -c1-12)
out="${XDG_CACHE_HOME:-$HOME/.cache}/crowsnest/kube/$version-$key"

build() { # build NAME DIR
  local name=$1 dir=$2
  if [ -x "$out/$name" ]; then
    return 0
  fi
  echo "building $name into $out (first run only; takes a few minutes)" >&2
  # Build to a temporary name and rename, so an interrupted build never
  # leaves a half-written binary that a later run would trust.
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/.$name.tmp" .)
  mv "$out/.$name.tmp" "$out/$name"
}

mkdir -p "$out"
# Test packages run in parallel and each may call this script: one builder at a time.
exec 9>"$out/.lock"
flock 9
build etcd "$here/etcd"
build kube-apiserver "$here/apiserver"
# Only the Argo CD end-to-end tests (internal/argocdenv) run it.
build kube-controller-manager "$here/controller-manager"
echo "$out"
