#!/usr/bin/env bash
# Runs every fuzz target in the module for FUZZTIME each and prints one
# result line per target. Usage: hack/fuzz.sh FUZZTIME
#
# A target fails when `go test -fuzz` fails and either wrote a reproducer
# under the package's testdata/fuzz/<Target>/ or failed for any reason other
# than a bare "context deadline exceeded". That bare error with no reproducer
# is a known race in Go's fuzz coordinator at the -fuzztime boundary
# (go.dev/issue/75804, fixed in Go 1.27): the target is run once more, and
# only a second such failure is reported, as "flaky", without failing the run.
set -euo pipefail

fuzztime=${1:?usage: hack/fuzz.sh FUZZTIME}
go=${GO:-go}
module=$($go list -m)
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# reproducers lists the files under the target's corpus directory.
reproducers() {
  local dir=$1/testdata/fuzz/$2
  if [[ -d $dir ]]; then find "$dir" -type f | sort; fi
}

# run_target runs one target; it returns 0 (passed), 1 (failed) or 2 (the
# coordinator's deadline race, no reproducer written).
run_target() {
  local pkg=$1 dir=$2 target=$3 before after
  before=$(reproducers "$dir" "$target")
  if $go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"; then
    return 0
  fi
  after=$(reproducers "$dir" "$target")
  if [[ $before == "$after" ]] && grep -q '^    context deadline exceeded$' "$log" &&
    ! grep -q 'Failing input written' "$log"; then
    return 2
  fi
  return 1
}

results=()
failed=0
while read -r pkg dir; do
  for target in $($go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "fuzz ${pkg#"$module"/} $target ($fuzztime)"
    status=ok
    rc=0
    run_target "$pkg" "$dir" "$target" || rc=$?
    if [[ $rc -eq 2 ]]; then
      echo "fuzz: $target hit Go's fuzztime deadline race (go.dev/issue/75804) with no reproducer; running it again"
      rc=0
      run_target "$pkg" "$dir" "$target" || rc=$?
      [[ $rc -eq 2 ]] && status=flaky
    fi
    if [[ $rc -eq 1 ]]; then
      status=FAIL
      failed=$((failed + 1))
    fi
    results+=("$(printf '%-6s %s %s' "$status" "${pkg#"$module"/}" "$target")")
  done
done < <($go list -f '{{.ImportPath}} {{.Dir}}' ./...)

printf '%s\n' "${results[@]}"
echo "${#results[@]} fuzz targets, $failed failed (a crasher is saved under the package's testdata/fuzz/<Target>)"
[[ $failed -eq 0 ]]
