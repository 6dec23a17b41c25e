#!/usr/bin/env bash
# The test command: sets the machine up on first use, then runs every test
# that needs no GPU (Bazel skips tests tagged "gpu"; see tools/gpu/).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
tools/bootstrap.sh
exec bazel test //... "$@"
