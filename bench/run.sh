#!/usr/bin/env bash
# Issue 7's measurements on the GPU machine, in one go: the raw driver floor
# (driver_bench), the Go path and its checks (gpubench, one process per
# section), the peers (peers.py: torch events, torch.profiler over CUPTI),
# then one markdown table and one raw JSON file (report.py).
#
# Run from a copy of the repository with .carry/gpu/bin staged by
# tools/gpu/stage.sh (tools/gpu/run.sh calls this after the GPU tests):
#   bash bench/run.sh
# Writes $OUT/bench-results.md, $OUT/bench-raw.json and the pieces and
# logs under $OUT/bench/; without $OUT, the same under bench/results/.
#
# Every step is independent and bounded: a step that fails, crashes or
# times out gets a "FAILED: <why>" row and the next one runs; the whole
# stays within BENCH_BUDGET_S seconds (default 330) plus the report.
# Always exits 0 once the report is written: the results say what failed.
#
# For a try without a GPU: BENCH_BIN=<dir with gpubench> GPUBENCH_FLAGS="-fake -quick" bash bench/run.sh
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="${BENCH_BIN:-$ROOT/.carry/gpu/bin}"
DEST="${OUT:-$ROOT/bench/results}"
RAW="$DEST/bench"
BUDGET="${BENCH_BUDGET_S:-330}"
read -r -a GOFLAGS_EXTRA <<<"${GPUBENCH_FLAGS:-}"
mkdir -p "$RAW"
rm -f "$RAW"/*.json "$RAW"/*.log "$RAW"/*.tsv "$RAW"/summary.txt
start=$SECONDS

# step NAME LIMIT_S COMMAND...: runs COMMAND with its output in NAME.log,
# under a time limit cut to what is left of the budget, and notes how it
# ended in status.tsv.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET - (SECONDS - start)))
  if ((left < 10)); then
    printf '%s\tskipped\t0\t0\t%s\n' "$name" "$*" >>"$RAW/status.tsv"
    echo "bench: $name skipped: time budget spent"
    return
  fi
  ((limit > left)) && limit=$left
  local t0=$SECONDS rc
  timeout -k 5 "$limit" "$@" >"$RAW/$name.log" 2>&1
  rc=$?
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - t0))" "$limit" "$*" >>"$RAW/status.tsv"
  echo "bench: $name exit $rc ($((SECONDS - t0)) s): $(tail -n 1 "$RAW/$name.log" 2>/dev/null | cut -c1-160)"
}

# The machine line: what ran where.
{
  smi() { command -v nvidia-smi >/dev/null && nvidia-smi "$@" 2>/dev/null; }
  printf 'gpu\t%s\n' "$(smi --query-gpu=name --format=csv,noheader | sort | uniq -c | sed 's/^ *\([0-9]*\) \(.*\)/\2 x\1/' | paste -sd';' -)"
  printf 'driver\t%s\n' "$(smi --query-gpu=driver_version --format=csv,noheader | head -1)"
  printf 'cuda\t%s\n' "$(smi | grep -o 'CUDA Version: [0-9.]*' | head -1 | sed 's/CUDA Version: //')"
  printf 'nvcc\t%s\n' "$( (nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version 2>/dev/null) | grep -o 'release [0-9.]*' | sed 's/^/nvcc /')"
  printf 'cpu\t%s\n' "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  printf 'cores\t%s\n' "$(nproc)"
  printf 'kernel\tLinux %s\n' "$(uname -r)"
  printf 'glibc\t%s\n' "$(ldd --version 2>/dev/null | head -1)"
  printf 'commit\t%s\n' "$(cat "$ROOT/.carry/gpu/COMMIT" 2>/dev/null || git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
  printf 'date\t%s\n' "$(date -u +%FT%TZ)"
  printf 'command\t%s\n' "${BENCH_COMMAND:-bash bench/run.sh}"
  printf 'bench_command\t%s\n' "bash bench/run.sh (BENCH_BUDGET_S=$BUDGET${GPUBENCH_FLAGS:+ GPUBENCH_FLAGS=\"$GPUBENCH_FLAGS\"})"
} >"$RAW/machine.tsv" 2>/dev/null

# Binaries copied in may have lost their execute bit.
for b in driver_bench gpubench; do
  [[ -f "$BIN/$b" && ! -x "$BIN/$b" ]] && chmod +x "$BIN/$b" 2>/dev/null
done

step driver_bench 45 "$BIN/driver_bench" --json "$RAW/driver_bench.json"
# Each section in its own process; its soft budget is 70% of its limit, so
# a slow one stops early with what it has rather than be killed.
for s in overhead:75 disabled:30 accuracy:30 safety:45 harvestwait:20 harvest:45 ceiling:30 multigpu:30; do
  name=${s%%:*} limit=${s##*:}
  step "go-$name" "$limit" "$BIN/gpubench" -section "$name" -out "$RAW" -budget "$((limit * 7 / 10))s" "${GOFLAGS_EXTRA[@]}"
done
step peers 90 python3 "$ROOT/bench/peers.py" --out "$RAW/peers.json"

# The report runs whatever the budget says.
if timeout 60 python3 "$ROOT/bench/report.py" --dir "$RAW" --md "$DEST/bench-results.md" --json "$DEST/bench-raw.json" \
  --summary "$RAW/summary.txt" >"$RAW/report.log" 2>&1; then
  echo "bench: done in $((SECONDS - start)) s: $DEST/bench-results.md, $DEST/bench-raw.json"
  grep -m1 '^- Machine' "$DEST/bench-results.md"
  grep -m1 '^- Verdicts' "$DEST/bench-results.md"
  cat "$RAW/summary.txt"
else
  {
    echo "# gpuspans bench: FAILED: report.py did not run"
    echo
    echo '```'
    tail -n 20 "$RAW/report.log"
    echo '```'
    echo
    echo "Steps (name, exit, seconds, limit, command):"
    echo
    echo '```'
    cat "$RAW/status.tsv"
    echo '```'
  } >"$DEST/bench-results.md"
  echo "bench: report.py failed; see $RAW/report.log"
fi
exit 0
