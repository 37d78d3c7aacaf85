#!/usr/bin/env bash
# Builds what crowsnest's Argo CD end-to-end tests run, from the Go module
# proxy (no prebuilt binary can be downloaded here), and caches it:
#   argocd     Argo CD's application controller and repo server (main.go)
#   kustomize  the version Argo CD's hack/tool-versions.sh names (tools/go.mod)
#   helm       likewise
#   git-verify-wrapper.sh  Argo CD's own, from its module
# redis-server comes from Debian (hack/apt.sh).
#
# The cache folder is keyed by the Argo CD version and a hash of the wrapper
# module and this script, so a change to either rebuilds and a repeated run
# is a no-op. One builder at a time (flock); each binary is built to a
# temporary name and renamed. Prints the folder on its last line.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ARGOCD_VERSION=v3.6.1 # keep in step with go.mod here and test/conformance/go.mod
# Argo CD v3.6 needs Go 1.27; the Go command fetches this toolchain once.
export GOTOOLCHAIN=${ARGOCD_GOTOOLCHAIN:-go1.27.3}
key=$(cat "$here"/go.mod "$here"/go.sum "$here"/main.go "$here"/build.sh "$here"/tools/go.mod "$here"/tools/go.sum \
      | sha256sum | cut -c1-12)
out="${XDG_CACHE_HOME:-$HOME/.cache}/crowsnest/argocd/$ARGOCD_VERSION-$key"

build() { # build NAME DIR PKG: build to a temporary name, then rename
  local name=$1 dir=$2 pkg=$3
  [ -x "$out/$name" ] && return 0
  echo "building $name into $out (first run only; takes minutes)" >&2
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/.$name.tmp" "$pkg")
  mv "$out/.$name.tmp" "$out/$name"
}

mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
build argocd "$here" .
build kustomize "$here/tools" sigs.k8s.io/kustomize/kustomize/v5
build helm "$here/tools" helm.sh/helm/v4/cmd/helm
# The repo server runs git-verify-wrapper.sh on every revision it renders
# (Argo CD's image installs it from the module's hack/); install the
# module's own copy beside the binaries.
if [ ! -x "$out/git-verify-wrapper.sh" ]; then
  moddir=$(cd "$here" && go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)
  install -m 0755 "$moddir/hack/git-verify-wrapper.sh" "$out/.git-verify-wrapper.sh.tmp"
  mv "$out/.git-verify-wrapper.sh.tmp" "$out/git-verify-wrapper.sh"
fi
echo "$out"
