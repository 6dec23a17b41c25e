#!/usr/bin/env bash
# Builds everything the GPU machine runs and copies it to .carry/gpu/:
# every test tagged "gpu", plus the extra binaries named below. The GPU
# machine has the driver and CUDA but no Go or Bazel, so it gets binaries.
#
# Cgo binaries stay dynamically linked against glibc: they dlopen
# libcuda.so.1, and a static glibc cannot load a shared library linked
# against the host's glibc. glibc is forward compatible, so binaries built
# against Debian 12's 2.36 run on the GPU machine's newer one.
#
# Then run, on the GPU machine, from the repository root:
#   bash tools/gpu/run.sh            (logs to $OUT or ./out/gpu)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
tools/bootstrap.sh
EXTRA=(//cuda:driver_bench //go/cmd/gpuspans //bench/gpubench "$@")
mapfile -t TESTS < <(bazel query 'attr(tags, "\bgpu\b", tests(//...))' 2>/dev/null)
((${#TESTS[@]})) || { echo "stage: no test tagged gpu" >&2; exit 1; }
bazel build -c opt "${TESTS[@]}" "${EXTRA[@]}"
DEST="$ROOT/.carry/gpu"
rm -rf "$DEST"
mkdir -p "$DEST/tests" "$DEST/bin"
copy() { # copy LABEL DIR
  local path
  path="$(bazel cquery -c opt --output=starlark \
    --starlark:expr='target.files_to_run.executable.path' "$1" 2>/dev/null)"
  cp "$path" "$2/"
  chmod u+w "$2/$(basename "$path")"
}
for t in "${TESTS[@]}"; do copy "$t" "$DEST/tests"; done
for b in "${EXTRA[@]}"; do copy "$b" "$DEST/bin"; done
git rev-parse HEAD >"$DEST/COMMIT"
du -sh "$DEST"
ls -l "$DEST/tests" "$DEST/bin"
