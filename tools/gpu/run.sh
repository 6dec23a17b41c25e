#!/usr/bin/env bash
# Runs what tools/gpu/stage.sh staged in .carry/gpu/ on a GPU machine: every
# gpu test, then the driver benchmark, then bench/run.sh. Writes one log and
# a summary to $OUT (or ./out/gpu), and exits non-zero if any test failed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SRC="$ROOT/.carry/gpu"
OUTDIR="${OUT:-$ROOT/out/gpu}"
mkdir -p "$OUTDIR"
LOG="$OUTDIR/gpu-run.log"
SUM="$OUTDIR/gpu-summary.txt"
: >"$LOG"
{
  echo "commit: $(cat "$SRC/COMMIT" 2>/dev/null || echo unknown)"
  echo "date: $(date -u +%FT%TZ)"
  echo "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | paste -sd';') ; $(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -1) ; $(uname -r) ; $(ldd --version | head -1)"
} | tee "$SUM"
pass=0
fail=0
export GPUSPANS_GPU=1
# Our CUPTI declarations against the real headers (the toolkit is here).
if [[ -f /usr/local/cuda/include/cupti_activity.h ]]; then
  echo "=== cupti_layout_check" >>"$LOG"
  if g++ -std=c++17 -I/usr/local/cuda/include -I"$ROOT/third_party/cuda" "$ROOT/cuda/test/cupti_layout_check.cc" \
      -o /tmp/cupti_layout_check >>"$LOG" 2>&1 && /tmp/cupti_layout_check >>"$LOG" 2>&1; then
    pass=$((pass + 1)); echo "PASS cupti_layout_check" | tee -a "$SUM"
  else
    fail=$((fail + 1)); echo "FAIL cupti_layout_check" | tee -a "$SUM"
  fi
fi
# One binary per test target tagged "gpu": gpu_test (the C++ core),
# cuda_gpu_test (go/cuda: the binding) and integration_gpu_test
# (go/integration: the hub end to end); each runs in a process of its own.
for t in "$SRC"/tests/*; do
  name="$(basename "$t")"
  echo "=== $name" >>"$LOG"
  args=()
  # Go test binaries carry the Go build-info magic; they want -test.v.
  grep -qa 'Go buildinf:' "$t" && args=(-test.v -test.count=1)
  start=$SECONDS
  if timeout 300 "$t" "${args[@]}" >>"$LOG" 2>&1; then
    pass=$((pass + 1)); echo "PASS $name ($((SECONDS - start)) s)" | tee -a "$SUM"
  else
    fail=$((fail + 1)); echo "FAIL $name ($((SECONDS - start)) s)" | tee -a "$SUM"
  fi
done
# The Python GPU tests (the C span path from torch), when the library and
# the extension were built into out/python and carried (CONTRIBUTING.md).
if [[ -f "$ROOT/out/python/libgpuspans.so" && -f "$ROOT/out/python/_hot.abi3.so" ]] &&
  python3 -c 'import torch' 2>/dev/null; then
  echo "=== python test_gpu" >>"$LOG"
  start=$SECONDS
  if (cd "$ROOT/python" && GPUSPANS_LIB=../out/python/libgpuspans.so GPUSPANS_HOT=../out/python/_hot.abi3.so \
    PYTHONPATH=. timeout 300 python3 -m unittest -v tests.test_gpu) >>"$LOG" 2>&1; then
    pass=$((pass + 1)); echo "PASS python test_gpu ($((SECONDS - start)) s)" | tee -a "$SUM"
  else
    fail=$((fail + 1)); echo "FAIL python test_gpu ($((SECONDS - start)) s)" | tee -a "$SUM"
  fi
fi
if [[ -x "$SRC/bin/driver_bench" ]]; then
  echo "=== driver_bench" >>"$LOG"
  timeout 300 "$SRC/bin/driver_bench" 2>&1 | tee -a "$LOG" >>"$SUM"
fi
# The measurements of bench/ (results to $OUT, else bench/results/); they
# report their own failures and never fail this run.
if [[ -f "$ROOT/bench/run.sh" ]]; then
  echo "=== bench" >>"$LOG"
  BENCH_COMMAND="bash tools/gpu/run.sh" bash "$ROOT/bench/run.sh" 2>&1 | tee -a "$LOG" | tee -a "$SUM"
fi
echo "gpu: $pass passed, $fail failed" | tee -a "$SUM"
[[ $fail -eq 0 ]]
