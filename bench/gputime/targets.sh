#!/usr/bin/env bash
# Issues 50's and 51's GPU targets in one device call (under 10 minutes):
# profile_restart.py (a decode restarted across builds on one profile
# file), served.py's workloads against the profiler-free truth, then every
# staged GPU test. Built here first:
#   go build -ldflags="-s -w" -buildmode=c-shared -o out/python/libgpuspans.so ./go/capi
#   git rev-parse HEAD >out/python/COMMIT
#   tools/python/hot.sh out/python/_hot.abi3.so /usr/bin/python3
#   tools/gpu/stage.sh --plain          # .carry/gpu/tests
# then, carrying out/python and .carry/gpu/tests, on the GPU machine:
#   bash bench/gputime/targets.sh       # results to $OUT (default out/targets)
# PARTS picks what runs (default: restart served integration); also
# probe (busy_probe.py), eager (eager_between.py in both phase orders) and
# copy (copy_probe.py).
# LIBS is served.py's --libs (NAME=PATH,...: one gpuspans process each).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/out/targets}"
mkdir -p "$OUT"
PY="${PY:-/opt/torch/.venv/bin/python3}"
export PYTHONPATH="$ROOT/python" GPUSPANS_LIB="$ROOT/out/python/libgpuspans.so" GPUSPANS_HOT="$ROOT/out/python/_hot.abi3.so"
step() { echo "$(date -u +%T) $*" | tee -a "$OUT/summary.txt"; }
# The device tool brings back at most 8 files: more are packed into one.
pack() {
  local files=("$OUT"/*)
  ((${#files[@]} > 8)) || return 0
  (cd "$OUT" && tar czf targets.tgz --remove-files -- *)
}
trap pack EXIT
{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
  # The library's commit (the device's copy of the tree may name another).
  echo "library: $(cat out/python/COMMIT 2>/dev/null || echo unknown)"
} >"$OUT/machine.txt" 2>&1
PARTS=" ${PARTS:-restart served integration} "
part() { [[ "$PARTS" == *" $1 "* ]]; }
if part restart; then
  step "profile_restart.py"
  prof="$(mktemp -d)/decode.profile"
  timeout 270 "$PY" bench/gputime/profile_restart.py --profile "$prof" >"$OUT/restart.jsonl" 2>"$OUT/restart.err"
  step "profile_restart.py rc=$?"
  cp "$prof" "$OUT/decode.profile" 2>/dev/null
fi
if part probe; then
  step "busy_probe.py"
  timeout 150 "$PY" bench/gputime/busy_probe.py >"$OUT/probe.jsonl" 2>"$OUT/probe.err"
  step "busy_probe.py rc=$?"
fi
if part served; then
  step "served.py"
  timeout 420 "$PY" bench/gputime/served.py --libs "${LIBS:-callbacks=$GPUSPANS_LIB}" --tokens 0 --seconds 6 \
    --log "$OUT/served-children.jsonl" >"$OUT/served.jsonl" 2>"$OUT/served.err"
  step "served.py rc=$?"
fi
if part eager; then
  # Hub phases between bare ones, and bare phases alone before the hub: is
  # an eager step slower after a hub closed, or does the loop drift?
  for phases in bare,events,auto,bare2,events2 bare,bare2,bare3,auto,bare4; do
    step "eager_between.py $phases"
    timeout 120 "$PY" bench/gputime/eager_between.py --procs 2 --seconds 2 --phases "$phases" \
      >>"$OUT/eager_between.jsonl" 2>>"$OUT/eager_between.err"
    step "eager_between.py rc=$?"
  done
fi
if part copy; then
  step "copy_probe.py"
  timeout 120 "$PY" bench/gputime/copy_probe.py >"$OUT/copy_probe.jsonl" 2>"$OUT/copy_probe.err"
  step "copy_probe.py rc=$?"
fi
part integration || exit 0
# Every GPU test staged (tools/gpu/stage.sh), GPU tests on, as tools/gpu/run.sh.
export GPUSPANS_GPU=1
for t in .carry/gpu/tests/*; do
  [[ -x $t ]] || continue
  args=()
  grep -qa 'Go buildinf:' "$t" && args=(-test.v -test.count=1)
  timeout 120 "$t" "${args[@]}" >"$OUT/$(basename "$t").txt" 2>&1
  step "$(basename "$t") rc=$?"
done
