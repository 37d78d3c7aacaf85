#!/usr/bin/env bash
# Installs the Go tools crowsnest's checks use (pinned versions) into a cache
# folder through the Go module proxy. Idempotent: a present tool is kept.
# Prints the folder holding the tools on its last line.
set -euo pipefail

GOLANGCI_LINT_VERSION=v2.15.0
# The Helm CLI for charts/crowsnest's lint and render tests. It builds from
# the module proxy on its own (go install pkg@version ignores crowsnest's
# go.mod); the first build takes a few minutes.
HELM_VERSION=v3.22.0

bin="${XDG_CACHE_HOME:-$HOME/.cache}/crowsnest/tools/bin"
mkdir -p "$bin"
exec 9>"$bin/.lock"
flock 9

install() { # install NAME MODULE@VERSION
  local name=$1 pkg=$2 stamp="$bin/.$1.version"
  if [ -x "$bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$pkg" ]; then
    return 0
  fi
  echo "installing $pkg" >&2
  GOBIN="$bin" go install "$pkg"
  echo "$pkg" > "$stamp"
}

install golangci-lint "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
install helm "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
echo "$bin"
