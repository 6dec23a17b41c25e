#!/usr/bin/env bash
# Runs buildifier, the Starlark formatter and linter, with the given
# arguments (relative paths are the caller's):
#   tools/buildifier.sh -r .               # format every Starlark file here
#   tools/buildifier.sh -mode=check -r .   # what CI's checks run
#
# Pinned in tools/deps/go.mod with its whole module graph (read-only: a
# missing go.sum line is an error, not a fresh lookup) and built on first use,
# or when the pin changes, with the Go SDK Bazel uses, into the set-up cache's
# bin/ (about 30 s; its compiled packages go in a build cache of their own
# that goes with it). Only contributors and CI's checks need it, so neither
# of the README's two commands builds it.
#
# Environment: GPUSPANS_CACHE, the set-up cache (default ~/.cache/gpuspans).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${GPUSPANS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuspans}"
bin="$CACHE/bin/buildifier"

toolchain="$("$ROOT/tools/bootstrap.sh" --go)"
stamp="$toolchain $(cat "$ROOT/tools/deps/go.mod" "$ROOT/tools/deps/go.sum" | sha256sum | cut -c1-16)"
if [[ ! -x "$bin" || "$(cat "$bin.stamp" 2>/dev/null)" != "$stamp" ]]; then
  echo "buildifier.sh: building buildifier (tools/deps/go.mod) into $CACHE/bin (about 30 s)" >&2
  mkdir -p "$CACHE/bin"
  gocache="$(mktemp -d)"
  rc=0
  out="$(cd "$ROOT/tools/deps" && GOTOOLCHAIN="$toolchain" GOFLAGS=-mod=readonly \
    GOBIN="$CACHE/bin" GOCACHE="$gocache" go install tool 2>&1)" || rc=$?
  rm -rf "$gocache" # 80 MB of compiled packages that nothing reads again
  if ((rc != 0)); then
    printf '%s\n' "$out" >&2
    echo "buildifier.sh: error: cannot build the buildifier pinned in tools/deps/go.mod" >&2
    exit 1
  fi
  echo "$stamp" >"$bin.stamp"
fi
exec "$bin" "$@"
