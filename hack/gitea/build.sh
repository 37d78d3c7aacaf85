#!/usr/bin/env bash
# Builds the Gitea that crowsnest's pull-request tests run (internal/giteaenv)
# from the Go module proxy (no prebuilt binary can be downloaded here), and
# caches it:
#   gitea      the server and its CLI, without the web frontend's assets:
#              the tests use only the HTTP API and Git over HTTP
#   options/   Gitea's own option files (licenses, .gitignore and README
#              templates for auto-init, locales), read from disk (no bindata)
#   templates/ its page and mail templates, likewise
#
# SQLite is modernc.org/sqlite, Gitea's default driver since v1.27: pure Go,
# so the build needs no cgo. The cache folder is keyed by the Gitea version
# and a hash of this script, so a change to either rebuilds and a repeated
# run is a no-op. One builder at a time (flock); the binary is built to a
# temporary name and renamed. Prints the folder on its last line.
#
# GITEA_VERSION picks the release (default: the pinned one). Gitea's module
# is built as the main module, in its own folder of the module cache, with
# its own go.mod and go.sum: since v1.27 it declares itself gitea.dev while
# the proxy serves it as code.gitea.io/gitea, so no wrapper module can
# require it, and its replace directives rule out `go install pkg@version`.
#
# A cold build of v1.27.3 (empty module and build caches) takes about 13
# CPU minutes and 1.4 GB of modules; the binary is 110 MiB. Gitea then
# starts in about 2 s.
#
# --cached prints the folder if the binary is built and exits 3 if not,
# without building (internal/giteaenv's CROWSNEST_GITEA_BUILD=0).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
pinned=v1.27.3 # keep in step with internal/giteaenv and the Makefile
GITEA_VERSION=${GITEA_VERSION:-$pinned}
case $GITEA_VERSION in
v[0-9]*.[0-9]*.[0-9]*) ;;
*) echo "GITEA_VERSION=$GITEA_VERSION: want a release tag such as $pinned" >&2; exit 2 ;;
esac
key=$(sha256sum <"$here/build.sh" | cut -c1-12)
out="${XDG_CACHE_HOME:-$HOME/.cache}/crowsnest/gitea/$GITEA_VERSION-$key"

if [ "${1:-}" = --cached ]; then
  if [ -x "$out/gitea" ] && [ -d "$out/options" ] && [ -d "$out/templates" ]; then
    echo "$out"
    exit 0
  fi
  echo "Gitea $GITEA_VERSION is not built in $out (bash hack/gitea/build.sh builds it)" >&2
  exit 3
fi

mkdir -p "$out"
exec 9>"$out/.lock"
flock 9

if [ -x "$out/gitea" ] && [ -d "$out/options" ] && [ -d "$out/templates" ]; then
  echo "$out"
  exit 0
fi

# The module's folder in the module cache (read-only; go build writes only -o).
src=$(cd "$out" && GOWORK=off GOFLAGS= go mod download -json "code.gitea.io/gitea@$GITEA_VERSION" \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
if [ -z "$src" ] || [ ! -f "$src/go.mod" ]; then
  echo "Gitea $GITEA_VERSION: the module proxy serves no source for it" >&2
  exit 1
fi

if [ ! -x "$out/gitea" ]; then
  echo "building gitea $GITEA_VERSION into $out (first run only; takes minutes)" >&2
  (cd "$src" && CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=readonly \
    go build -trimpath -ldflags="-s -w -X main.Version=${GITEA_VERSION#v}" -o "$out/.gitea.tmp" .)
  mv "$out/.gitea.tmp" "$out/gitea"
fi
for d in options templates; do
  if [ ! -d "$out/$d" ]; then
    rm -rf "$out/.$d.tmp"
    cp -R "$src/$d" "$out/.$d.tmp"
    chmod -R u+w "$out/.$d.tmp" # the module cache's copies are read-only
    mv "$out/.$d.tmp" "$out/$d"
  fi
done
echo "$out"
