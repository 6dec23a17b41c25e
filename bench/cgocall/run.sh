#!/usr/bin/env bash
# The C-to-Go call benchmark, in one run: the Bazel-built c-archive (the Go
# SDK Bazel uses), then the same Go code built as a c-archive by each older
# Go in $COMPARE (plain `go build`, fetched with GOTOOLCHAIN), all linked
# into bench/cgocall/cgocall_bench.c. Run on an otherwise idle machine:
#   bash bench/cgocall/run.sh | tee bench/results/cgocall.txt
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
COMPARE="${COMPARE:-go1.21.13}"
cd "$ROOT"
tools/bootstrap.sh
echo "# $(date -u +%F) $(uname -m), $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "## Bazel, Go $(grep -m1 '^GO_SDK_VERSION=' tools/bootstrap.sh | cut -d= -f2 | cut -d' ' -f1), c-archive"
bazel run -c opt //bench/cgocall:cgocall_bench 2>/dev/null
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src" "$tmp/inc/bench/cgocall/cgocall_go"
cp bench/cgocall/cgocall_go/main.go "$tmp/src/"
printf 'module cgocall\n\ngo 1.19\n' >"$tmp/src/go.mod"
for v in $COMPARE; do
  goroot="$(cd / && GOTOOLCHAIN="$v" go env GOROOT)"
  echo "## plain go build, $v, c-archive"
  (cd "$tmp/src" && GOROOT="$goroot" GOTOOLCHAIN=local GOFLAGS= "$goroot/bin/go" build -buildmode=c-archive -o "$tmp/$v.a" .)
  cp "$tmp/$v.h" "$tmp/inc/bench/cgocall/cgocall_go/cgocall_go.h"
  gcc -O2 -I"$tmp/inc" bench/cgocall/cgocall_bench.c "$tmp/$v.a" -lpthread -o "$tmp/bench-$v"
  "$tmp/bench-$v"
done
