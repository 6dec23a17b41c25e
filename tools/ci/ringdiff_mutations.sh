#!/usr/bin/env bash
# The ring's differential test (go/capi's TestRingDifferential) must catch
# a mutation of either writer and of the protocol they share as what it is
# there to find: a divergence from the model (spanringtest) after a named
# op. Each mutation is applied to a copy of the tree (tracked files, as
# they are in the working tree), where the test runs with 100,000
# operations a seed, and its output must say "diverged after op N"; a test
# that passes, or fails any other way (a build error, a crash), fails this
# script. The mutations:
#   C, failure paths:
#     c-capture    spanpath.c counts a record refused on a capturing stream as retired;
#     c-next-fail  spanpath.c's follow() leaves the lender's end event lent when the record fails;
#   C, success paths:
#     c-lend       spanpath.c's follow() forgets that the lender's end event is lent;
#     c-step       spanpath.c's step arms the step before the one it should;
#   Go, failure paths:
#     go-capture   recorder.go counts a record refused on a capturing stream as retired;
#     go-dead      recorder.go counts an end on a dead recorder as retired, not errored;
#   Go, success path:
#     go-from      recorder.go's follow() forgets which span the borrower began at;
#   NextStep:
#     nextstep-c   spanpath.c's next step makes the shared boundary before the step;
#     nextstep-go  spans.go's NextStep makes the shared boundary before the step;
#   shared layout:
#     shared       spanring.Pack numbers positions from 2, for the Go writer
#                  (and the model) but not for spanpath.c, which packs its own.
# Usage: tools/ci/ringdiff_mutations.sh [NAME...]   (no name: all)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tools/ci/mutate.sh
source "$ROOT/tools/ci/mutate.sh"
want=("$@")
caught=0

mutate() { # mutate NAME FILE FROM TO
  local name=$1 file=$2 from=$3 to=$4 src="$TMP/$1"
  if ((${#want[@]})) && [[ " ${want[*]} " != *" $name "* ]]; then
    return
  fi
  local t0=$SECONDS
  mutated_copy "$src" "$file" "$from" "$to"
  local out
  if out="$(cd "$src" && GPUSPANS_RINGDIFF_OPS=100000 go test -count=1 -run '^TestRingDifferential$' ./go/capi 2>&1)"; then
    echo "ringdiff mutation $name: the test passed; it must catch it" >&2
    exit 1
  fi
  local at
  at="$(grep -m1 -oE 'diverged after op [0-9]+ of seed [0-9]+ \([^)]*\)' <<<"$out")" || {
    echo "ringdiff mutation $name: the test failed, but not as a divergence after a named op:" >&2
    tail -20 <<<"$out" >&2
    exit 1
  }
  echo "ringdiff mutation $name: caught, $at ($((SECONDS - t0)) s)"
  caught=$((caught + 1))
  rm -rf "$src"
}

mutate c-capture go/capi/spanpath.c 'release(c, sl, pos, GS_SP_DROP_CAPTURING);' 'release(c, sl, pos, GS_SP_DROP_RETIRED);'
mutate c-next-fail go/capi/spanpath.c '    STORE(&ps->lent, GS_SP_LENT_NONE);
' ''
mutate c-lend go/capi/spanpath.c '  STORE(&ps->lent, GS_SP_LENT_WAITING);
' ''
mutate c-step go/capi/spanpath.c 'n % every == 0' '(n + 1) % every == 0'
mutate go-capture go/gpuspans/recorder.go 'r.release(sl, pos, DropCapturing)' 'r.release(sl, pos, DropRetired)'
mutate go-dead go/gpuspans/recorder.go 'if r.status.Load()&recStateMask == recDead {
		r.release(sl, pos, errored)' 'if r.status.Load()&recStateMask == recDead {
		r.release(sl, pos, DropRetired)'
mutate go-from go/gpuspans/recorder.go '	sl.From = prev + 1
' ''
mutate nextstep-c go/capi/spanpath.c '  gs_hub_status st = gs_hub_begin_step_call(hub);
  if (st != GS_HUB_OK) return st;
  return gs_hub_next_lane_call(hub, last, first);' '  gs_hub_status st = gs_hub_next_lane_call(hub, last, first);
  if (st != GS_HUB_OK) return st;
  return gs_hub_begin_step_call(hub);'
mutate nextstep-go go/gpuspans/spans.go '	h.beginStep()
	h.NextLane(last, first)' '	h.NextLane(last, first)
	h.beginStep()'
mutate shared go/internal/spanring/spanring.go 'return (pos+1)<<PosShift | state' 'return (pos+2)<<PosShift | state'
((caught > 0)) || { echo "ringdiff mutations: no mutation named ${want[*]}" >&2; exit 1; }
echo "ringdiff mutations: all $caught caught as divergences"
