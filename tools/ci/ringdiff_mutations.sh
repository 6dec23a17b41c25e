#!/usr/bin/env bash
# The ring's differential test (go/capi's TestRingDifferential) must fail
# under a mutation of either writer and of the protocol they share. Each
# mutation is applied to a copy of the tree (tracked files, as they are in
# the working tree), where the test runs with 100,000 operations a seed
# and must report a difference from the model, not just fail to build:
#   - C:      spanpath.c's follow() forgets that the lender's end event is lent;
#   - C step: spanpath.c's step arms the step before the one it should;
#   - Go:     recorder.go's follow() forgets which span the borrower began at;
#   - shared: spanring.Pack numbers positions from 2, for the Go writer
#             (and the model) but not for spanpath.c, which packs its own.
# Usage: tools/ci/ringdiff_mutations.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

mutate() { # mutate NAME FILE FROM TO
  local name=$1 file=$2 from=$3 to=$4 src="$TMP/$1"
  mkdir -p "$src"
  (cd "$ROOT" && git ls-files -z | tar --null -T - -cf -) | (cd "$src" && tar -xf -)
  python3 - "$src/$file" "$from" "$to" <<'PY'
import sys
path, old, new = sys.argv[1], sys.argv[2], sys.argv[3]
s = open(path).read()
if s.count(old) != 1:
    sys.exit(f"{path}: the mutation's text occurs {s.count(old)} times, want once: {old!r}")
open(path, "w").write(s.replace(old, new))
PY
  local out
  if out="$(cd "$src" && GPUSPANS_RINGDIFF_OPS=100000 go test -count=1 -run '^TestRingDifferential$' ./go/capi 2>&1)"; then
    echo "ringdiff mutation $name: the test passed; it must catch it" >&2
    exit 1
  fi
  grep -q "differ from the model" <<<"$out" || {
    echo "ringdiff mutation $name: the test failed for another reason:" >&2
    tail -20 <<<"$out" >&2
    exit 1
  }
  echo "ringdiff mutation $name: caught: $(grep -m1 -o 'after op [0-9]* of seed [0-9]*[^:]*' <<<"$out")"
  rm -rf "$src"
}

mutate c go/capi/spanpath.c '  STORE(&ps->lent, GS_SP_LENT_WAITING);
' ''
mutate c-step go/capi/spanpath.c 'n % every == 0' '(n + 1) % every == 0'
mutate go go/gpuspans/recorder.go '	sl.From = prev + 1
' ''
mutate shared go/internal/spanring/spanring.go 'return (pos+1)<<PosShift | state' 'return (pos+2)<<PosShift | state'
echo "ringdiff mutations: all 4 caught"
