#!/usr/bin/env bash
# The first-run benchmark: what a new user meets, following only the README,
# on this machine. A fresh clone of HEAD and a fresh HOME (so fresh Go module
# and build caches, set-up cache and Bazel output base; the Debian packages
# are the machine's), then the README's two commands, timed:
#   - the run command, tools/gpuspans.sh demo, until the demo serves
#     (/metrics answers);
#   - then the test command, tools/test.sh, to its end;
# and the disk both left behind. Prints one line per figure against its
# budget (the README's promise), and a last line naming any figure over it.
# A benchmark for CI's log, not a gate: times on a shared 2-core machine
# move with its load, and disk with the host Go (one that is not the pinned
# 1.26.8 downloads the SDK into the fresh HOME, about 300 MB). It fails only
# when a command fails. Uses whatever Go is first on PATH as the host Go.
#
# Environment: FIRSTRUN_DEMO_BUDGET_S (300), FIRSTRUN_TEST_BUDGET_S (600),
# FIRSTRUN_DISK_BUDGET_MB (2048), FIRSTRUN_KEEP=1 keeps the directory.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
demo_budget="${FIRSTRUN_DEMO_BUDGET_S:-300}"
test_budget="${FIRSTRUN_TEST_BUDGET_S:-600}"
disk_budget="${FIRSTRUN_DISK_BUDGET_MB:-2048}"
say() { echo "firstrun: $*"; }

dir="$(mktemp -d "${TMPDIR:-/tmp}/gpuspans-firstrun.XXXXXX")"
demo_pid=""
cleanup() {
  [[ -n "$demo_pid" ]] && kill "$demo_pid" 2>/dev/null
  if [[ -d "$dir/clone" ]]; then (cd "$dir/clone" && HOME="$dir/home" bazel shutdown >/dev/null 2>&1) || true; fi
  if [[ "${FIRSTRUN_KEEP:-}" != 1 ]]; then chmod -R u+w "$dir" 2>/dev/null; rm -rf "$dir"; fi
}
trap cleanup EXIT
mkdir -p "$dir/home"
git clone -q "$ROOT" "$dir/clone"
cd "$dir/clone"
export HOME="$dir/home"
unset GOFLAGS GOTOOLCHAIN GOPATH GOMODCACHE GOCACHE GPUSPANS_CACHE XDG_CACHE_HOME
say "commit $(git rev-parse --short HEAD); host $(GOTOOLCHAIN=local go env GOVERSION); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"

now() { date +%s.%N; }
secs() { printf '%.0f' "$(echo "$2 - $1" | bc)"; }
over=0
check() { # check WHAT VALUE BUDGET UNIT
  local verdict="within"
  if (($2 > $3)); then verdict="OVER"; over=1; fi
  say "$1: $2 $4 (budget $3 $4: $verdict)"
}

t0="$(now)"
# TMPDIR: the demo's trace on exit goes with the rest.
TMPDIR="$dir" tools/gpuspans.sh demo --listen=127.0.0.1:0 >"$dir/demo.out" 2>"$dir/demo.err" &
demo_pid=$!
url=""
while [[ -z "$url" ]]; do
  if ! kill -0 "$demo_pid" 2>/dev/null; then
    cat "$dir/demo.err" >&2
    say "FAIL: the run command exited before serving"
    exit 1
  fi
  sleep 1
  url="$(sed -n 's/.*metrics: \(http:[^ ]*\/metrics\).*/\1/p' "$dir/demo.out" | head -1)"
done
metrics="$(curl -fsS "$url")" || { say "FAIL: $url did not answer"; exit 1; }
grep -q '^gpuspans_' <<<"$metrics" || { say "FAIL: $url has no gpuspans_ series"; exit 1; }
t1="$(now)"
kill -INT "$demo_pid"
wait "$demo_pid" || { say "FAIL: the demo did not exit cleanly on Ctrl-C"; exit 1; }
demo_pid=""
check "run command, fresh clone to serving demo" "$(secs "$t0" "$t1")" "$demo_budget" s
# The pinned Go builds the command whichever way it is built: the run
# command's, and a plain `go build` with the host Go (go.mod's toolchain line).
for how in run plain; do
  b=out/bin/gpuspans
  [[ "$how" == plain ]] && { b="$dir/plain-gpuspans"; go build -o "$b" ./go/cmd/gpuspans; }
  v="$(go version "$b" | awk '{print $2}')" # no head: a pipe it closes early fails the pipeline
  [[ "$v" == go1.26.8 ]] || { say "FAIL: the $how build of the command was built with $v, not go1.26.8"; exit 1; }
  say "the $how build of the command: $v"
done

t2="$(now)"
if ! tools/test.sh >"$dir/test.log" 2>&1; then
  tail -40 "$dir/test.log" >&2
  say "FAIL: the test command failed"
  exit 1
fi
t3="$(now)"
say "test command: $(grep -cE '^//\S+ +PASSED' "$dir/test.log") tests passed"
check "test command, first run after the demo" "$(secs "$t2" "$t3")" "$test_budget" s
ob="$(bazel info output_base 2>/dev/null)"
say "disk: $(du -sm "$ob" | cut -f1) MB Bazel output base, $(du -sm "$HOME/go" | cut -f1) MB Go modules and SDK, $(du -sm "$HOME/.cache/go-build" | cut -f1) MB Go build cache"
check "disk after both commands (clone and fresh HOME)" "$(du -smc "$dir/clone" "$HOME" | tail -1 | cut -f1)" "$disk_budget" MB

t4="$(now)"
tools/gpuspans.sh help >/dev/null
say "run command, warm: $(secs "$t4" "$(now)") s"
if [[ "$over" != 0 ]]; then
  say "OVER BUDGET: see the lines marked OVER above (reported, not failed: see this script's comment)"
fi
exit 0
