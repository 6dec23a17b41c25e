#!/usr/bin/env bash
# The test command on a busy machine: every test of tools/test.sh run again
# (no cached result) beside CPU burners that hold the load at 4x the cores,
# as CI machines that share their cores are. A test that waits on a
# wall-clock bound the load can break fails here, not on a user's machine.
# Needs tools/bootstrap.sh to have run (tools/test.sh runs it).
#   tools/ci/loaded.sh [BAZEL TEST ARGUMENTS]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
cores="$(nproc)"
burners=$((3 * cores)) # with the tests' own, the load is about 4x the cores
pids=()
stop() { ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null || true; }
trap stop EXIT
for ((i = 0; i < burners; i++)); do
  (while :; do :; done) &
  pids+=($!)
done
# The load average follows the burners over a minute or so: start the
# tests once it has (at most two minutes).
for ((i = 0; i < 120; i++)); do
  awk -v want="$burners" '{exit !($1 >= want)}' /proc/loadavg && break
  sleep 1
done
echo "loaded: $burners CPU burners on $cores cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
start=$SECONDS
rc=0
tools/test.sh --cache_test_results=no "$@" || rc=$?
echo "loaded: tools/test.sh exit $rc in $((SECONDS - start)) s; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$rc"
