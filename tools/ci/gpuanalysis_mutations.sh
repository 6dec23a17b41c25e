#!/usr/bin/env bash
# GPU time's reference test (go/gpuspans's TestGPUAnalysisAgainstEveryNanosecond,
# the analysis against a count of every nanosecond) must fail under each
# named mistake of the analysis, and say where it differs. Each mutation is
# applied to a copy of the tree (tracked files, as they are in the working
# tree), where the test must report a difference from the brute-force
# count, not just fail to build:
#   - busy-past-end:    a busy run crossing a lane span's end counts one ns past it;
#   - host-launch-swap: the host's part of an idle stretch read as launch latency and back;
#   - copy-as-busy:     copies and memsets counted as kernels (busy);
#   - shared-boundary:  a run that ends where a lane span begins (the previous
#                       span's last kernel) taken as inside it: a gap counted twice;
#   - wait-launch-swap: queued work on the stream that ran last read as a wait;
#   - host-boundary:    a launch call returning exactly as the device runs dry
#                       counted as the host's stretch;
#   - latency-as-launch: the latency after a late launch call inside the span
#                       read as launch, as at the span's start;
#   - call-start-swap:  inside the span, the host's time before the launch call
#                       began counted as the call's, and at the span's start not;
#   - call-past-return: the latency after a late launch call counted as inside it.
# Usage: tools/ci/gpuanalysis_mutations.sh   (about a minute on an idle machine)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# shellcheck source=tools/ci/mutate.sh
source "$ROOT/tools/ci/mutate.sh"
FILE=go/gpuspans/gpuanalysis.go

mutate() { # mutate NAME FROM TO
  local name=$1 from=$2 to=$3 src="$TMP/$1"
  mutated_copy "$src" "$FILE" "$from" "$to"
  local out
  if out="$(cd "$src" && go test -count=1 -run '^TestGPUAnalysisAgainstEveryNanosecond$' ./go/gpuspans 2>&1)"; then
    echo "gpuanalysis mutation $name: the test passed; it must catch it" >&2
    exit 1
  fi
  grep -q "differs from the brute-force count" <<<"$out" || {
    echo "gpuanalysis mutation $name: the test failed for another reason:" >&2
    tail -20 <<<"$out" >&2
    exit 1
  }
  echo "gpuanalysis mutation $name: caught: $(grep -m1 -o 'seed [0-9]*: [^(]*' <<<"$out")"
  rm -rf "$src"
}

mutate busy-past-end 'sp.busy += min(r.end, e) - max(r.start, s)' 'sp.busy += min(r.end, e+1) - max(r.start, s)'
mutate host-launch-swap '		c.Host += time.Duration(host)
		c.Launch += time.Duration(rest - host)' '		c.Launch += time.Duration(host)
		c.Host += time.Duration(rest - host)'
mutate copy-as-busy 'return k == backend.RecordKernel' 'return k != backend.RecordLaunch'
mutate shared-boundary 'for r0 < len(runs) && runs[r0].end <= s {' 'for r0 < len(runs) && runs[r0].end < s {'
mutate wait-launch-swap 'case prev.stream == n.stream:' 'case prev.stream != n.stream:'
mutate host-boundary 'case end > x:' 'case end >= x:'
mutate latency-as-launch '		h := b
' '		h := min(end, b)
'
mutate call-start-swap '		cs := x
		if inner {' '		cs := x
		if !inner {'
mutate call-past-return 'if ce := min(end, h); ce > cs {' 'if ce := h; ce > cs {'
echo "gpuanalysis mutations: all 9 caught"
