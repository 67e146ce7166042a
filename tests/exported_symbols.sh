#!/usr/bin/env bash
# exported_symbols.sh LIBZEROC_SO INCLUDE_DIR — the shared library exports exactly the functions
# include/zeroc/*.h declares with ZC_API: an internal function that leaks out (or a public one
# left hidden) fails, naming it.
set -euo pipefail
lib=$1 inc=$2
exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^_' | sort)
declared=$(grep -rhoE '^ZC_API[^(]*\bzc_[A-Za-z0-9_]+[[:space:]]*\(' "$inc"/zeroc/*.h |
           grep -oE 'zc_[A-Za-z0-9_]+[[:space:]]*\($' | tr -d '( ' | sort)
extra=$(comm -23 <(echo "$exported") <(echo "$declared"))
missing=$(comm -13 <(echo "$exported") <(echo "$declared"))
[ -n "$extra" ] && echo "exported but not declared ZC_API in include/zeroc/: $extra"
[ -n "$missing" ] && echo "declared ZC_API but not exported: $missing"
[ -z "$extra$missing" ] || exit 1
echo "$(echo "$exported" | wc -l) exported functions, all declared ZC_API"
