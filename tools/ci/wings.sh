#!/usr/bin/env bash
# The Go code's three wings, checked on the import graph (tests included):
# no package imports one of a higher wing.
#   1 library       go/gpuspans, go/backend, go/cuda, go/export, go/profile,
#                   proto, and the helpers in go/internal, under all of
#                   them: they import nothing of ours outside go/internal
#   2 HTTP          go/gpuspanshttp/...
#   3 applications  go/cmd/..., go/capi, go/integration (the integration
#                   tests), bench/..., examples/...
# Also: the library and HTTP wings' production code (tests excluded) links
# none of the test doubles, nor the GPU kit (go/cuda/cudakit). A package in
# no wing fails the check: place it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
M=github.com/gpuspans/gpuspans

wing() {
  case "$1" in
  "$M"/go/gpuspanshttp | "$M"/go/gpuspanshttp/*) echo 2 ;;
  "$M"/go/cmd/* | "$M"/go/capi | "$M"/go/capi/* | "$M"/go/integration | "$M"/go/integration/* | "$M"/bench/* | "$M"/examples/*) echo 3 ;;
  "$M"/go/gpuspans | "$M"/go/gpuspans/* | "$M"/go/backend | "$M"/go/backend/* | \
    "$M"/go/cuda | "$M"/go/cuda/* | "$M"/go/export/* | "$M"/go/profile | "$M"/go/internal/* | "$M"/proto/*) echo 1 ;;
  *) echo 0 ;;
  esac
}
testonly="^$M/go/(backend/fake|gpuspans/gpuspanstest(/.*)?|cuda/cudatest(/.*)?|cuda/cudakit|internal/spanring/spanringtest)\$"

bad=0
while IFS='|' read -r pkg prod tests; do
  w=$(wing "$pkg")
  if [[ $w == 0 ]]; then
    echo "wings: $pkg is in no wing: place it (tools/ci/wings.sh)"
    bad=1
    continue
  fi
  for imp in $prod $tests; do
    [[ $imp == "$M"/* ]] || continue
    if [[ $pkg == "$M"/go/internal/* && $imp != "$M"/go/internal/* ]]; then
      echo "wings: $pkg, a helper under the library, imports $imp"
      bad=1
    fi
    iw=$(wing "$imp")
    if ((iw > w)); then
      echo "wings: $pkg (wing $w) imports $imp (wing $iw)"
      bad=1
    fi
  done
  if ((w < 3)) && ! [[ $pkg =~ $testonly ]]; then
    for imp in $prod; do
      if [[ $imp =~ $testonly ]]; then
        echo "wings: production package $pkg imports the test double $imp"
        bad=1
      fi
    done
  fi
done < <(go list -f '{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}' ./...)
exit $bad
