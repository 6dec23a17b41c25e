#!/usr/bin/env bash
# End-to-end: the live page in a real browser. Starts the demo (the binary
# given as $1, or one built with go build) on a loopback port with the
# simulated GPU, loads /debug/gpuspans in headless Chromium, and checks in
# the DOM that every lane's histogram is an <svg> with bars holding spans,
# that the kernel histograms are there too, that the latest kernel
# window's step is drawn as a timeline (lanes, kernels, the gap 1.5 ms of
# host work leaves, with names on hover), and that the page's own script
# refreshes it; and, on a demo with --tenants, that whose GPU time lists
# each tenant, the heaviest requests and each lane's cost model. Saves the
# DOM and a screenshot under $ARTIFACTS (default
# out/e2e). Installs Debian's chromium when missing, as root.
#
# Usage: tools/e2e/chromium.sh [path/to/gpuspans]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mkdir -p "$ARTIFACTS"

apt_install chromium chromium
BIN="$(gpuspans_bin "${1:-}")"
start_demo "$BIN" --kernel_span_every=2 --kernel_timing=auto --kernel_window_every=100ms --host_gap=1500us

# Wait until both lanes and a kernel have spans, so the page has bars.
has_spans() {
  local page
  page="$(curl -fs --max-time 5 "$DEMO_URL/debug/gpuspans?refresh=0")" || return 1
  grep -q 'data-kind="lane" data-name="prefill" data-device="0" data-count="[1-9]' <<<"$page" &&
    grep -q 'data-kind="lane" data-name="decode" data-device="0" data-count="[1-9]' <<<"$page" &&
    grep -q 'data-kind="kernel"' <<<"$page"
}
wait_for 30 "spans on the live page" has_spans
wait_for 30 "a kernel window's timeline on the live page" \
  bash -c "curl -fs --max-time 5 '$DEMO_URL/debug/gpuspans?refresh=0' | grep -q '<svg class=\"timeline\"'"

chrome() {
  timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --user-data-dir="$(mktemp -d -p "$TMP")" "$@" 2>>"$TMP/chromium.log"
}

log "dumping the DOM"
t0=$SECONDS
chrome --dump-dom "$DEMO_URL/debug/gpuspans?refresh=0" >"$ARTIFACTS/debug-page.dom.html" ||
  fail "chromium --dump-dom failed: $(tail -5 "$TMP/chromium.log")"
log "DOM dumped in $((SECONDS - t0))s ($(wc -c <"$ARTIFACTS/debug-page.dom.html") bytes)"

# One line per element, so each histogram can be cut out with sed.
dom="$(tr '\n' ' ' <"$ARTIFACTS/debug-page.dom.html" | sed 's/<svg /\n<svg /g; s/<\/svg>/<\/svg>\n/g')"
bars_in() { # bars_in KIND NAME: bars with at least one span in that histogram
  grep "^<svg class=\"hist\" data-kind=\"$1\" data-name=\"$2\"" <<<"$dom" |
    grep -o '<rect class="bar[^"]*"[^>]*data-count="[1-9][0-9]*"' | wc -l
}
for lane in prefill decode; do
  n="$(bars_in lane "$lane")"
  ((n > 0)) || fail "lane $lane: no <svg> histogram with bars in the browser's DOM"
  log "lane $lane: histogram with $n bar(s) holding spans"
done
kernels="$(grep -c '^<svg class="hist" data-kind="kernel"' <<<"$dom" || true)"
((kernels >= 3)) || fail "only $kernels kernel histograms in the DOM"
log "$kernels kernel histograms"
grep -q '<table id="summary">' "$ARTIFACTS/debug-page.dom.html" || fail "no summary table"
timeline="$(grep '^<svg class="timeline"' <<<"$dom" | head -1)"
[[ -n "$timeline" ]] || fail "no timeline <svg> in the browser's DOM"
tk="$(grep -o '<rect class="kernel"' <<<"$timeline" | wc -l)"
tg="$(grep -o '<rect class="gap"' <<<"$timeline" | wc -l)"
((tk >= 9)) || fail "the timeline draws $tk kernels, want the step's 9 (3 prefill, 3 decode, 3 graph)"
((tg >= 1)) || fail "the timeline draws no gap, though 1.5 ms of host work leaves the decode lane's GPU idle"
grep -q '<title>attn_decode: ' <<<"$timeline" || fail "the timeline's kernels have no names on hover"
grep -q '<title>gap [^<]* between sample and norm</title>' <<<"$timeline" ||
  fail "the host's gap is not named between decode's last eager kernel and the graph's first: $(grep -o '<title>gap [^<]*' <<<"$timeline")"
grep -q '<table id="gpu-time">' "$ARTIFACTS/debug-page.dom.html" || fail "no GPU time table"
log "timeline: $tk kernels, $tg gap(s), named on hover"

# The inline script refetches the page and swaps in the new data; it writes
# "updated" into the status once a swap has happened. Virtual time lets the
# one-second timer fire within the budget.
log "checking the page refreshes itself"
chrome --virtual-time-budget=4000 --dump-dom "$DEMO_URL/debug/gpuspans?refresh=1" >"$TMP/refreshed.html" ||
  fail "chromium --dump-dom (refresh) failed: $(tail -5 "$TMP/chromium.log")"
grep -q 'id="status"[^>]*>live, every 1 s; updated' "$TMP/refreshed.html" ||
  fail "the page did not refresh itself: status is $(grep -o 'id="status"[^<]*' "$TMP/refreshed.html")"

log "taking a screenshot"
png="$ARTIFACTS/debug-page.png"
rm -f "$png"
chrome --hide-scrollbars --window-size=1280,1800 --screenshot="$png" "$DEMO_URL/debug/gpuspans?refresh=0" >/dev/null ||
  fail "chromium --screenshot failed: $(tail -5 "$TMP/chromium.log")"
[[ -s "$png" ]] || fail "no screenshot written"
[[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "$png is not a PNG"
log "screenshot: $png ($(wc -c <"$png") bytes)"

# Whose GPU time, on a demo whose requests come from 3 tenants.
start_demo "$BIN" --tenants=3
wait_for 30 "finished requests on the page" \
  bash -c "curl -fs --max-time 5 '$DEMO_URL/debug/gpuspans?refresh=0' | grep -q '<table id=\"request-heaviest\">'"
chrome --dump-dom "$DEMO_URL/debug/gpuspans?refresh=0" >"$ARTIFACTS/whose-gpu-time.dom.html" ||
  fail "chromium --dump-dom (tenants) failed: $(tail -5 "$TMP/chromium.log")"
whose="$(tr '\n' ' ' <"$ARTIFACTS/whose-gpu-time.dom.html" | sed 's/<table /\n<table /g; s/<\/table>/<\/table>\n/g')"
classes="$(grep '<table id="request-classes">' <<<"$whose" || true)"
for t in t1 t2 t3; do
  grep -q "<td class=\"l\">model demo-llm, tenant $t</td>" <<<"$classes" || fail "whose GPU time lists no row for tenant $t: $classes"
done
grep -q '<table id="request-heaviest">' <<<"$whose" || fail "whose GPU time lists no heaviest requests"
lanes="$(grep '<table id="request-lanes">' <<<"$whose" || true)"
[[ "$(grep -o '<tr><td>0</td>' <<<"$lanes" | wc -l)" == 2 ]] || fail "whose GPU time: want a cost model row for each of 2 lanes: $lanes"
log "whose GPU time: 3 tenants, the heaviest requests and 2 lanes' cost models in the browser's DOM"
log "PASS in $((SECONDS - E2E_START))s"
