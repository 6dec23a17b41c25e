#!/usr/bin/env bash
# Builds libgpuspans.so (go/capi with -buildmode=c-shared), the compiled
# span calls (tools/python/hot.sh) and the Python wheel around them, with the
# standard library alone (no PyPI):
#   tools/python/wheel.sh [out-dir]        (default out/python)
# then: pip install out/python/gpuspans-*.whl
# Go: the host `go` (GOTOOLCHAIN fetches the go.mod version), or $GO; the
# extension needs gcc and python3's headers (Debian: python3-dev).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="$(mkdir -p "${1:-$ROOT/out/python}" && cd "${1:-$ROOT/out/python}" && pwd)"
GO="${GO:-go}"
# -s -w: no symbol table or DWARF (a third smaller); the exported functions
# stay in the dynamic symbols ctypes uses.
(cd "$ROOT" && "$GO" build -buildmode=c-shared -ldflags="-s -w" -o "$OUT/libgpuspans.so" ./go/capi)
rm -f "$OUT/libgpuspans.h" # go build's header; C callers use go/capi/include/gpuspans/hub.h
"$ROOT/tools/python/hot.sh" "$OUT/_hot.abi3.so"
python3 "$ROOT/tools/python/wheel.py" --lib "$OUT/libgpuspans.so" --hot "$OUT/_hot.abi3.so" --out "$OUT"
