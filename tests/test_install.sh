#!/usr/bin/env bash
# test_install.sh BUILD_DIR [EXTRA_CFLAGS] — `cmake --install` into a temporary prefix, then builds
# examples/linear_regression.c with nothing but the installed pkg-config file and runs it on
# 2 ranks: it must fit y = 3x − 1 (w and b within 1e-3; SGD on a convex problem). The installed
# zeroc and the example run without LD_LIBRARY_PATH or ldconfig (their rpath finds the library).
set -euo pipefail
build=$1
extra=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=$(mktemp -d)
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/zeroc include/zeroc/engine.h; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
pc=$(find "$prefix" -name zeroc.pc)
lib=$(dirname "$(find "$prefix" -name 'libzeroc.so*' | head -1)")
[ -n "$pc" ] && [ -n "$lib" ] || { echo "missing after install: zeroc.pc or libzeroc.so"; exit 1; }
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
# shellcheck disable=SC2046
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror $extra "$root/examples/linear_regression.c" \
  $(pkg-config --cflags --libs zeroc) -o "$prefix/linreg"
unset LD_LIBRARY_PATH
version=$("$prefix/bin/zeroc" --version) || { echo "installed bin/zeroc does not run"; exit 1; }
echo "$version"
[ "$(ldd "$prefix/bin/zeroc" | awk '/libzeroc/ {print $3}')" -ef "$lib/libzeroc.so.0" ] ||
  { echo "installed bin/zeroc does not load $lib/libzeroc.so.0"; exit 1; }
[ "$(ldd "$prefix/linreg" | awk '/libzeroc/ {print $3}')" -ef "$lib/libzeroc.so.0" ] ||
  { echo "the example built with pkg-config's flags does not load $lib/libzeroc.so.0"; exit 1; }
out=$("$root/tests/mpirun.sh" 2 "$prefix/linreg")
echo "$out"
echo "$out" | python3 -c '
import re, sys
m = re.search(r"w = (\S+), b = (\S+)", sys.stdin.read())
ok = m and abs(float(m[1]) - 3) < 1e-3 and abs(float(m[2]) + 1) < 1e-3
print("1 passed, 0 failed" if ok else "0 passed, 1 failed")
sys.exit(0 if ok else 1)'
