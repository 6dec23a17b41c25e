#!/usr/bin/env bash
# The test command: sets the machine up on first use (tools/bootstrap.sh),
# then runs every test that needs no GPU under Bazel (bazel test //...;
# tests tagged "gpu" are skipped, see tools/gpu/). Arguments go to bazel
# test, targets among them in place of //...:
#   tools/test.sh //go/gpuspans:gpuspans_test --test_output=all
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
say() { echo "test.sh: $*" >&2; }

case "${1:-}" in
  -h | --help)
    cat <<'EOF'
Usage: tools/test.sh [BAZEL TEST ARGUMENTS]

Runs every test that needs no GPU with Bazel: bazel test //... (tests tagged
"gpu" are skipped; tools/gpu/ runs those on a GPU machine). Arguments are
passed to bazel test; targets among them replace //..., e.g.
  tools/test.sh //go/gpuspans:gpuspans_test --test_output=all

The first run sets the machine up (Debian packages, rules_go, the Go SDK;
tools/bootstrap.sh) and builds everything: about 8 minutes on 2 cores and
0.93 GB in Bazel's output base (README.md, "Two commands", has the measured
figures). Later runs take seconds, or about half a minute when Bazel's server has
to start again.
EOF
    exit 0
    ;;
esac

tools/bootstrap.sh
targets=0
for a in "$@"; do [[ "$a" == -* ]] || targets=1; done
((targets)) || set -- //... "$@"

# A first build is long: say so, and what the progress lines mean. bazel-out
# is the link Bazel makes to its outputs on its first build here.
if [[ ! -d bazel-out/ ]]; then
  say "first build: Bazel fetches the Go modules into its repositories, builds the Go standard library"
  say "twice (for Go tests and binaries, and -shared for the C archive), ~760 actions in all, then runs"
  say "the tests: about 8 minutes on 2 cores, 0.93 GB of disk (README.md, \"Two commands\"). Later runs"
  say "take seconds."
  say "step 1/2: fetching and analysing (2 to 3 minutes, with no output until it is done)"
  bazel build --nobuild --noshow_progress //...
  say "step 2/2: building and testing (about 6.5 minutes); Bazel's lines read [done / total actions];"
  say "GoStdlib is a standard library (2 to 3 minutes), GoCompilePkg a Go package, CppCompile a C++ file"
fi
# Progress every 20 s at most, and a report on long-running actions every
# 30 s, rather than Bazel's default on a pipe (every 60 s and more).
rc=0
bazel test --show_progress_rate_limit=20 --progress_report_interval=30 "$@" || rc=$?
# The build cache gazelle's repository tools were built with
# (tools/bootstrap.sh): they are built, so it is only disk.
rm -rf "${GPUSPANS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpuspans}/repository-go-build"
exit "$rc"
