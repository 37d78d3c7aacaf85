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
#
# ARGOCD_VERSION picks the release (default: the pinned one, whose wrapper
# module and go.sum are checked in here). Any other version gets a wrapper
# module generated in the cache folder: Argo CD's own go.mod at that
# version gives the Go line and the replace block; modules it replaces
# with a folder of its repository (gitops-engine) are required at the same
# version instead, then `go mod tidy` resolves the rest through the proxy.
# Argo CD before v3.6 cannot be built here: its gitops-engine is a
# pseudo-version the module proxy does not serve.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
pinned=v3.6.1 # keep in step with go.mod here, internal/argocdenv and internal/testenv
ARGOCD_VERSION=${ARGOCD_VERSION:-$pinned}
case $ARGOCD_VERSION in
v[0-9]*.[0-9]*.[0-9]*) ;;
*) echo "ARGOCD_VERSION=$ARGOCD_VERSION: want a release tag such as $pinned" >&2; exit 2 ;;
esac
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

# generate_wrapper DIR: the wrapper module for ARGOCD_VERSION in DIR.
generate_wrapper() {
  local dir=$1 upstream goline
  [ -f "$dir/.generated" ] && return 0
  echo "generating the wrapper module for Argo CD $ARGOCD_VERSION in $dir" >&2
  rm -rf "$dir" && mkdir -p "$dir"
  upstream=$(cd "$dir" && GOWORK=off GOFLAGS= go mod download -json "github.com/argoproj/argo-cd/v3@$ARGOCD_VERSION" \
    | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
  if [ -z "$upstream" ] || [ ! -f "$upstream" ]; then
    echo "Argo CD $ARGOCD_VERSION: the module proxy serves no go.mod for it" >&2
    return 1
  fi
  goline=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$upstream")
  {
    echo "module github.com/crowsnest-dev/crowsnest/hack/argocd"
    echo
    echo "go $goline"
    echo
    echo "require github.com/argoproj/argo-cd/v3 $ARGOCD_VERSION"
    # Modules Argo CD replaces with a folder of its own repository, at the release's version.
    sed -n 's#^\(replace\)\{0,1\}[[:space:]]*\([^[:space:]]*\) => \./.*$#require \2 '"$ARGOCD_VERSION"'#p' "$upstream"
    # The replace block, without the folder replaces.
    awk '/^replace \(/ {inblock=1; print; next}
         inblock && /^\)/ {inblock=0; print; next}
         inblock && $0 !~ /=> \.\// {print; next}
         /^replace [^(]/ && $0 !~ /=> \.\// {print}' "$upstream"
  } >"$dir/go.mod"
  cp "$here/main.go" "$dir/main.go"
  (cd "$dir" && GOWORK=off GOFLAGS= go mod tidy) >&2
  touch "$dir/.generated"
}

src=$here
if [ "$ARGOCD_VERSION" != "$pinned" ]; then
  src=$out/src
  generate_wrapper "$src"
fi
build argocd "$src" .
build kustomize "$here/tools" sigs.k8s.io/kustomize/kustomize/v5
build helm "$here/tools" helm.sh/helm/v4/cmd/helm
# The repo server runs git-verify-wrapper.sh on every revision it renders
# (Argo CD's image installs it from the module's hack/); install the
# module's own copy beside the binaries.
if [ ! -x "$out/git-verify-wrapper.sh" ]; then
  moddir=$(cd "$src" && go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)
  install -m 0755 "$moddir/hack/git-verify-wrapper.sh" "$out/.git-verify-wrapper.sh.tmp"
  mv "$out/.git-verify-wrapper.sh.tmp" "$out/git-verify-wrapper.sh"
fi
echo "$out"
