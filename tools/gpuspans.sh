#!/usr/bin/env bash
# The run command: builds the gpuspans command with the go command and runs
# it with the given arguments (default: demo).
#
# Plain `go build`, not Bazel: the same sources (cgo compiles the C++ core
# through go/cuda/core_amalgamation.cc, which CI checks is current), with the
# Go SDK Bazel uses (GOTOOLCHAIN fetches it through the module proxy), and
# only the parts of the standard library the command imports, built once
# into Go's build cache. A first run takes about 2 minutes on 2 cores, a
# warm one a second or two; Bazel's first build of //... is the test
# command's (tools/test.sh).
#
# Environment: GPUSPANS_OUT, where the binary goes (default out/bin in the
# checkout).
set -euo pipefail
# Relative paths in the arguments are the caller's: remember where that is
# before moving to the checkout.
CALLER="$PWD"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
say() { echo "gpuspans.sh: $*" >&2; }

toolchain="$(tools/bootstrap.sh --go)"
export GOTOOLCHAIN="$toolchain"
bin="${GPUSPANS_OUT:-$ROOT/out/bin}/gpuspans"
mkdir -p "$(dirname "$bin")"

if [[ ! -x "$bin" ]]; then
  # The first build is long and go build is silent: say what each step is.
  say "first run: fetching Go ${toolchain#go} and the command's modules, then compiling it and the C++ core"
  say "(about 2 minutes on 2 cores, ~700 MB in Go's caches; later runs take a second or two)"
  say "step 1/3: the Go ${toolchain#go} SDK (~70 MB download)"
  go version >/dev/null
  say "step 2/3: the Go modules the command imports"
  go list -deps ./go/cmd/gpuspans >/dev/null
  say "step 3/3: compiling (the C++ core, the standard library's packages, ~300 Go packages): about 100 s"
  say "on 2 cores, with no output until it is done"
fi
# An up-to-date binary is left as it is (go build compares build IDs), in
# about a second; a new one is renamed into place, never half-written.
go build -o "$bin" ./go/cmd/gpuspans

cd "$CALLER"
if [[ $# -eq 0 ]]; then set -- demo; fi
# Hints in the command's output name it as the user ran it.
GPUSPANS_COMMAND="${GPUSPANS_COMMAND:-$0}" exec "$bin" "$@"
