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
#
# --plain builds the same sources with the host's go and g++ instead of
# Bazel (the amalgamations stand in for the cc_library deps): minutes
# faster on a cold machine, for measuring while working.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
DEST="$ROOT/.carry/gpu"
if [[ "${1:-}" == "--plain" ]]; then
  rm -rf "$DEST"
  mkdir -p "$DEST/tests" "$DEST/bin"
  inc=(-std=c++17 -O2 -Icuda/include -Ithird_party/cuda -Icuda -I.)
  core=(cuda/src/driver.cc cuda/src/pool.cc cuda/src/anchor.cc cuda/src/calibration.cc
    cuda/src/harvest.cc cuda/src/kernel_name.cc cuda/src/lock_rank.cc cuda/src/launch_watch.cc cuda/src/launch_guard.cc cuda/src/tracer.cc)
  g++ "${inc[@]}" -o "$DEST/bin/driver_bench" cuda/bench/driver_bench.cc "${core[@]}" cuda/src/kit.cc -ldl -pthread
  g++ "${inc[@]}" -o "$DEST/tests/gpu_test" cuda/test/gpu_test.cc "${core[@]}" cuda/src/fake_driver.cc cuda/src/fake_cupti.cc cuda/src/pool_testing.cc cuda/src/kit.cc -ldl -pthread
  # A test binary per Go package with GPU tests, as Bazel's targets tagged
  # "gpu": go/cuda's (the binding) and go/integration's (the hub end to end).
  go test -c -o "$DEST/tests/cuda_gpu_test" ./go/cuda
  go test -c -o "$DEST/tests/integration_gpu_test" ./go/integration
  go build -o "$DEST/bin/gpubench" ./bench/gpubench
  go build -o "$DEST/bin/gpuspans" ./go/cmd/gpuspans
  git rev-parse HEAD >"$DEST/COMMIT"
  du -sh "$DEST"
  exit 0
fi
tools/bootstrap.sh
EXTRA=(//cuda:driver_bench //go/cmd/gpuspans //bench/gpubench "$@")
mapfile -t TESTS < <(bazel query 'attr(tags, "\bgpu\b", tests(//...))' 2>/dev/null)
((${#TESTS[@]})) || { echo "stage: no test tagged gpu" >&2; exit 1; }
bazel build -c opt "${TESTS[@]}" "${EXTRA[@]}"
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
