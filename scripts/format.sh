#!/usr/bin/env bash
# format.sh [--check] — the C sources' layout, as .clang-format describes it: rewrites every
# tracked .c/.h/.inc file in place, or with --check changes nothing and fails naming each file
# that differs (run by scripts/test.sh). clang-format 14 (Debian bookworm's) is the reference:
# other versions may lay out a few constructs differently.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v clang-format >/dev/null || "$root/scripts/deps.sh" clang-format
command -v git >/dev/null || "$root/scripts/deps.sh"
# the tracked sources: a failing git (no checkout: a tarball) must fail here, not check nothing
listed=$(git ls-files '*.c' '*.h' '*.inc') || {
  echo "format: cannot list the tracked sources with git ls-files in $root (a git checkout?)" >&2
  exit 1
}
mapfile -t files <<<"$listed"
[ -n "$listed" ] || { echo "format: git ls-files lists no C sources in $root" >&2; exit 1; }
if [[ ${1:-} == --check ]]; then
  bad=()
  for f in "${files[@]}"; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if ((${#bad[@]})); then
    echo "format: ${#bad[@]} file(s) differ from .clang-format (run scripts/format.sh):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files as .clang-format lays them out"
else
  clang-format -i "${files[@]}"
fi
