#!/usr/bin/env bash
# Compiles the compiled span calls, python/gpuspans/_hot.c, into one
# extension for every CPython from 3.8 (the stable ABI, abi3):
#   tools/python/hot.sh OUT.so [PYTHON]        (PYTHON: default python3)
# It links nothing: the package hands it the library's function addresses.
# Needs gcc and PYTHON's headers (Debian: python3-dev); any 3.8+ will do.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:?usage: tools/python/hot.sh OUT.so [PYTHON]}"
py="${2:-python3}"
inc="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')" ||
  { echo "hot.sh: $py cannot say where its headers are" >&2; exit 1; }
[[ -f "$inc/Python.h" ]] ||
  { echo "hot.sh: no Python.h in $inc: install $py's headers (Debian: apt-get install python3-dev)" >&2; exit 1; }
gcc -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden \
  -I "$ROOT/go/capi/include" -I "$inc" "$ROOT/python/gpuspans/_hot.c" -o "$out"
