#!/usr/bin/env bash
# Installs the Debian packages crowsnest's tests need. Idempotent and quick:
# packages already present are not looked at again, and `apt-get update` runs
# only when something must be installed.
#
# Packages:
#   docker-registry  the CNCF distribution registry (2.8.x); internal/testreg
#                    runs /usr/bin/docker-registry with its own config on a
#                    free 127.0.0.1 port, so the package's own service is
#                    never needed: this script keeps it from starting.
#   redis-server     the cache Argo CD's application controller and repo
#                    server use in the Argo CD end-to-end tests; they run
#                    their own /usr/bin/redis-server on a free 127.0.0.1
#                    port, never the package's service.
set -euo pipefail

PACKAGES=(docker-registry redis-server)

missing=()
for p in "${PACKAGES[@]}"; do
  if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" != installed ]; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "apt.sh: already installed: ${PACKAGES[*]}"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "apt.sh: missing packages ${missing[*]}; run this script as root to install them" >&2
    exit 1
  fi
  sudo=(sudo)
fi

# Keep maintainer scripts from starting services (the registry's unit would
# listen on :5000). policy-rc.d exiting 101 is Debian's documented switch; a
# file we add is removed again, an existing one is left alone.
policy=/usr/sbin/policy-rc.d
added_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
  "${sudo[@]}" chmod 0755 "$policy"
  added_policy=1
fi
cleanup() {
  if [ -n "$added_policy" ]; then
    "${sudo[@]}" rm -f "$policy"
  fi
}
trap cleanup EXIT

echo "apt.sh: installing ${missing[*]}"
# Through env, because sudo drops the caller's environment.
apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -qq)
"${apt[@]}" update
"${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null

# On a host running systemd the unit may already be enabled from an earlier
# install; stop them so they do not hold :5000/:6379 or use disk behind
# our back.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  "${sudo[@]}" systemctl disable --now docker-registry.service redis-server.service >/dev/null 2>&1 || true
fi
echo "apt.sh: installed ${missing[*]}"
