#!/usr/bin/env bash
# Only go/cuda (the core's binding) and go/capi (the C ABI, a package main
# for its exports) import "C" in production code. Besides them only the
# test support go/cuda/cudatest (the fakes' hooks) and go/cuda/cudakit (the
# GPU kit), and the C-to-Go call benchmark bench/cgocall/cgocall_go, may.
# Every tracked .go file is read, whatever its build tags (go list would
# skip the files of tags it is not given), and a cgo file in any other
# directory fails the check.
# Usage: tools/ci/cgo.sh [--self-test]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
allowed='^(go/cuda|go/capi|go/cuda/cudatest|go/cuda/cudakit|bench/cgocall/cgocall_go)$'

# cgo_files FILE...: the files that import "C", alone or in an import block.
cgo_files() {
  awk '
    FNR == 1 { block = 0 }
    /^import[ \t]+(_[ \t]+)?"C"[ \t]*(\/\/.*)?$/ { print FILENAME; nextfile }
    /^import[ \t]*\($/ { block = 1; next }
    block && /^\)/ { block = 0; next }
    block && /^[ \t]*(_[ \t]+)?"C"[ \t]*(\/\/.*)?$/ { print FILENAME; nextfile }
  ' "$@"
}

# check LISTED_FILES...: fails naming each cgo file outside the allowed
# directories.
check() {
  local bad=0 f
  while read -r f; do
    [[ -n $f ]] || continue
    [[ $(dirname "$f") =~ $allowed ]] && continue
    echo "cgo: $f imports \"C\": only go/cuda and go/capi may (and the test support and benchmark tools/ci/cgo.sh names)" >&2
    bad=1
  done < <(cgo_files "$@")
  return $bad
}

if [[ ${1:-} == --self-test ]]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/go/cuda" "$tmp/go/gpuspans" "$tmp/go/export/prom"
  printf 'package cuda\n\n// #include <stdlib.h>\nimport "C"\n' >"$tmp/go/cuda/ok.go"
  printf 'package gpuspans\n\nimport (\n\t"fmt"\n\t"C"\n)\n' >"$tmp/go/gpuspans/bad.go"
  printf 'package prom\n\nimport _ "C" // a blank import is cgo too\n' >"$tmp/go/export/prom/bad.go"
  printf 'package prom\n\nvar s = []string{\n\t"C",\n}\n' >"$tmp/go/export/prom/fine.go"
  out="$(cd "$tmp" && check go/cuda/ok.go go/gpuspans/bad.go go/export/prom/bad.go go/export/prom/fine.go 2>&1)" &&
    { echo "cgo self-test: the planted cgo files passed" >&2; exit 1; }
  for want in go/gpuspans/bad.go go/export/prom/bad.go; do
    grep -q "cgo: $want " <<<"$out" || { echo "cgo self-test: $want not caught: $out" >&2; exit 1; }
  done
  if grep -qE 'ok\.go|fine\.go' <<<"$out"; then
    echo "cgo self-test: a file that may import C, or does not, was flagged: $out" >&2
    exit 1
  fi
  echo "cgo self-test: ok"
  exit 0
fi

mapfile -d '' files < <(git ls-files -z '*.go')
check "${files[@]}"
n="$(cgo_files "${files[@]}" | wc -l)"
((n > 0)) || { echo "cgo: found no cgo file at all: the check reads nothing" >&2; exit 1; }
echo "cgo: $n cgo files, all in go/cuda, go/capi and the listed test support and benchmark"
