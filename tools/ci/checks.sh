#!/usr/bin/env bash
# The checks CI runs besides the test command (.ci/run runs the race tests
# and the end-to-end tests itself). The list of them is the `step` lines
# below, and nowhere else: each names a check and the seconds it took when
# last measured, warm caches, on a 2-core machine shared with other builds
# (the number before its name; - where not measured yet).
#   tools/ci/checks.sh          run them all, then print the seconds each took
#   tools/ci/checks.sh --list   print the list, from the step lines
# Needs tools/bootstrap.sh to have run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
if [[ ${1:-} == --list ]]; then
  sed -nE 's/^step ([0-9]+|-) "(.*)"$/\1 s\t\2/p' "${BASH_SOURCE[0]}"
  exit 0
fi
fail() { echo "checks: FAIL: $*" >&2; exit 1; }
# step SECONDS NAME starts a check; the time each took is printed at the end.
times=()
step_name="" step_t0=0
step_done() {
  [[ -n $step_name ]] && times+=("$((SECONDS - step_t0)) s (listed ${step_est} s)	$step_name")
  step_name=""
}
step() {
  step_done
  if [[ $1 =~ ^([0-9]+|-)$ && $# -ge 2 ]]; then
    step_est=$1
    shift
  else
    step_est="-"
  fi
  step_name="$*" step_t0=$SECONDS
  echo "== $*"
}

step - "gazelle: BUILD files current"
bazel run //:gazelle -- -mode=diff || fail "BUILD files are stale: run 'bazel run //:gazelle'"

step - "gazelle: deps.bzl current with go.mod"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cp deps.bzl WORKSPACE "$tmp/"
bazel run //:gazelle-update-repos
if ! cmp -s deps.bzl "$tmp/deps.bzl" || ! cmp -s WORKSPACE "$tmp/WORKSPACE"; then
  diff -u "$tmp/deps.bzl" deps.bzl || true
  cp "$tmp/deps.bzl" "$tmp/WORKSPACE" .
  fail "deps.bzl is stale: run 'bazel run //:gazelle-update-repos'"
fi

step - "buildifier: formatting (all Starlark) and lint (MODULE.bazel)"
tools/buildifier.sh -mode=check -r . || fail "buildifier would reformat the files above: run 'tools/buildifier.sh -r .'"
tools/buildifier.sh -mode=check -lint=warn MODULE.bazel || fail "MODULE.bazel has lint warnings"

step 1 "protobuf: committed Go code current"
tools/genproto.sh --check

step 1 "the amalgamations (go/cuda, go/cuda/cudatest) current with cuda/"
tools/amalgamate.sh --check

step 1 "markdown: every relative link and anchor resolves"
python3 tools/ci/links.py --self-test
python3 tools/ci/links.py || fail "broken links in the Markdown above"
# README.md is the front page; the guides under docs/ hold the rest.
(($(wc -l <README.md) <= 200)) || fail "README.md has $(wc -l <README.md) lines: at most 200 (move the rest into docs/)"

step 1 "gofmt"
unformatted="$(gofmt -l $(git ls-files '*.go'))"
[[ -z "$unformatted" ]] || fail "gofmt would change: $unformatted"

step 2 "go vet"
go vet ./...

step 8 "staticcheck (staticcheck.conf)"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

step 1 "dependencies: three wings, library < HTTP < applications (tools/ci/wings.sh)"
tools/ci/wings.sh || fail "a package imports one of a higher wing, or production code a test double (above)"

step 1 "cgo: only go/cuda and go/capi import C, besides the test support and benchmark tools/ci/cgo.sh names"
tools/ci/cgo.sh --self-test
tools/ci/cgo.sh || fail "a package imports \"C\" that may not (above)"

step 2 "dependencies: the serving path and the live page link no protobuf"
# A serving binary that mounts the live page and the control endpoints must
# not pay for the span-file and wire-schema code (26 protobuf packages).
for pkg in ./go/gpuspans ./go/backend ./go/cuda ./go/gpuspanshttp/control ./go/gpuspanshttp/debugpage; do
  if go list -deps "$pkg" | grep -q '^google.golang.org/protobuf'; then
    fail "$pkg links protobuf: $(go list -deps "$pkg" | grep -c '^google.golang.org/protobuf') packages"
  fi
done

step - "dependencies: production code links no test code"
# The test doubles (the fake driver and CUPTI, the fake backend, the ring's
# model, the golden fixture) are for tests; the GPU kit (go/cuda/cudakit,
# //cuda:kit) is known work for the demo, benchmarks and GPU tests. A
# serving binary (the C ABI library too) carries neither.
doubles='github.com/gpuspans/gpuspans/go/(cuda/cudatest(/.*)?|cuda/cudakit|backend/fake|gpuspans/gpuspanstest(/golden)?|internal/spanring/spanringtest)'
for pkg in ./go/gpuspans ./go/backend ./go/backend/sim ./go/cuda ./go/gpuspanshttp ./go/gpuspanshttp/control ./go/gpuspanshttp/debugpage ./go/export/... ./go/capi; do
  deps="$(go list -deps "$pkg")"
  if grep -qxE "$doubles" <<<"$deps"; then
    fail "$pkg links test code: $(grep -xE "$doubles" <<<"$deps" | tr '\n' ' ')"
  fi
done
if grep -nE '(fake_driver|fake_cupti|pool_testing|kit)\.cc' go/cuda/core_amalgamation.cc; then
  fail "go/cuda/core_amalgamation.cc compiles test code into go/cuda"
fi
# --keep_going: the closure reaches @bazel_tools' macOS toolchain, which
# Debian's Bazel cannot load (exit 3, partial results: those are ours).
# The control query proves the query sees the test targets at all.
bzq() {
  local rc=0
  bazel query --keep_going --noimplicit_deps "$1" 2>/dev/null || rc=$?
  ((rc == 0 || rc == 3)) || echo "bazel query failed (exit $rc): $1" # non-empty: fails the checks below
}
testtargets='(//cuda:core_testing + //cuda:kit)'
[[ "$(bzq "deps(//go/cuda/cudatest) intersect $testtargets" | wc -l)" == 2 ]] ||
  fail "bazel query cannot see cudatest's test targets: the check below would prove nothing"
testdeps="$(bzq "deps(//go/cuda + //go/capi:hub + //go/capi:libgpuspans) intersect $testtargets")"
[[ -z "$testdeps" ]] || fail "//go/cuda or the C ABI library depends on test code: $testdeps"
# The test doubles' targets are testonly, so Bazel itself refuses them to
# anything that ships.
doubletargets='//cuda:core_testing + //go/cuda/cudatest + //go/cuda/cudatest/gputest + //go/backend/fake + //go/gpuspans/gpuspanstest + //go/gpuspans/gpuspanstest/golden + //go/internal/spanring/spanringtest'
notonly="$(bzq "($doubletargets) except attr(testonly, 1, $doubletargets)")"
[[ -z "$notonly" ]] || fail "test doubles not testonly: $notonly"

step 1 "inlining: the span entry points inline into the caller"
# The disabled path is one check of an atomic word only if the entry point
# inlines; a change that pushes one over the inliner's budget fails here.
inl="$(go build -gcflags=-m ./go/gpuspans 2>&1)"
for fn in BeginStep LaneBegin LaneEnd NextLane NextStep KernelBegin KernelEnd; do
  grep -qE "can inline \(\*Hub\)\.$fn\$" <<<"$inl" || fail "(*Hub).$fn no longer inlines"
done

step 6 "CGO_ENABLED=0: the API compiles without cgo"
CGO_ENABLED=0 go build ./...
CGO_ENABLED=0 go vet ./...

step - "the shared library for Python engines builds under Bazel (//go/capi:libgpuspans, not in //...)"
bazel build //go/capi:libgpuspans //go/capi:capi
out() { bazel cquery --output=starlark --starlark:expr='target.files.to_list()[0].path' "$1" 2>/dev/null; }
so="$(out //go/capi:libgpuspans)"
# It exports what the archive the C tests link exports, and no test hook.
exports() { nm "$@" --defined-only | awk '$2 == "T" && $3 ~ /^gs_hub_/ {print $3}' | sort -u; }
diff <(exports "$(out //go/capi:capi)") <(exports -D "$so") || fail "$so and the C archive export different functions (above)"
[[ "$(exports -D "$so" | wc -l)" -gt 30 ]] || fail "$so exports too few gs_hub_ functions: $(exports -D "$so" | wc -l)"
! exports -D "$so" | grep -q gs_hub_testing_ || fail "$so exports test hooks"

step 346 "the ring's differential test catches a mutation of each writer and of their protocol"
tools/ci/ringdiff_mutations.sh

step - "examples/: a consumer workspace builds gpuspans as an external repository"
(cd examples && bazel build //...)

step - "C++ core and tracer CPU tests under AddressSanitizer and UBSan"
bazel test --config=asan //cuda:core_test //cuda:tracer_test

step 90 "GPU time's analysis against a count of every nanosecond catches each of its named mutations (tools/ci/gpuanalysis_mutations.sh)"
tools/ci/gpuanalysis_mutations.sh

step - "the test command at a load of 4x the cores (tools/ci/loaded.sh: no cached result, CPU burners beside it)"
tools/ci/loaded.sh

step_done

echo "checks: all passed; the seconds each took:"
printf '  %s\n' "${times[@]}"
