#!/usr/bin/env bash
# Whose GPU time's GPU run, in one device call: two_tenants.py (the two
# tenants against their solo runs, the records against /metrics, tokens/s
# with attribution on and off, busy shares with kernel windows), then the
# staged GPU tests if there are any. Built here first:
#   go build -ldflags="-s -w" -buildmode=c-shared -o out/python/libgpuspans.so ./go/capi
#   git rev-parse HEAD >out/python/COMMIT
#   tools/python/hot.sh out/python/_hot.abi3.so /usr/bin/python3
#   tools/gpu/stage.sh --plain          # .carry/gpu/tests (optional)
# then, carrying out/python (and .carry/gpu/tests), on the GPU machine:
#   bash bench/attribution/run.sh       # results to $OUT (default out/attribution)
# Extra arguments go to two_tenants.py.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/out/attribution}"
mkdir -p "$OUT"
PY="${PY:-/opt/torch/.venv/bin/python3}"
export PYTHONPATH="$ROOT/python" GPUSPANS_LIB="$ROOT/out/python/libgpuspans.so" GPUSPANS_HOT="$ROOT/out/python/_hot.abi3.so"
step() { echo "$(date -u +%T) $*" | tee -a "$OUT/summary.txt"; }
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
  echo "library: $(cat out/python/COMMIT 2>/dev/null || echo unknown)"
} >"$OUT/machine.txt" 2>&1
step "two_tenants.py $*"
timeout 400 "$PY" bench/attribution/two_tenants.py "$@" >"$OUT/two_tenants.jsonl" 2>"$OUT/two_tenants.err"
step "two_tenants.py rc=$?"
[[ -d .carry/gpu/tests ]] || exit 0
export GPUSPANS_GPU=1
mkdir -p "$OUT/tests"
for t in .carry/gpu/tests/*; do
  [[ -x $t ]] || continue
  args=()
  grep -qa 'Go buildinf:' "$t" && args=(-test.v -test.count=1)
  timeout 120 "$t" "${args[@]}" >"$OUT/tests/$(basename "$t").txt" 2>&1
  step "$(basename "$t") rc=$?"
done
(cd "$OUT" && tar czf tests.tgz --remove-files tests)
