#!/usr/bin/env bash
# The run command: sets the machine up on first use, builds the gpuspans
# command with Bazel and runs it with the given arguments (default: demo).
set -euo pipefail
# Relative paths in the arguments are the caller's: remember where that is
# before moving to the checkout (bazel run sets BUILD_WORKING_DIRECTORY).
CALLER="${BUILD_WORKING_DIRECTORY:-$PWD}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
tools/bootstrap.sh
bazel build //go/cmd/gpuspans >&2
bin="$(bazel cquery --output=starlark --starlark:expr='target.files.to_list()[0].path' //go/cmd/gpuspans 2>/dev/null)"
cd "$CALLER"
if [[ $# -eq 0 ]]; then set -- demo; fi
exec "$ROOT/$bin" "$@"
