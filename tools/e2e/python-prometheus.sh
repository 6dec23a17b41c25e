#!/usr/bin/env bash
# End-to-end: a Python engine that serves its own /metrics with
# prometheus_client carries gpuspans' families there (gpuspans.prometheus),
# and a real Prometheus scraping that one target stores and queries them.
# Starts python/examples/prometheus_engine.py (the simulated GPU, known lane
# times) on a loopback port, checks its /metrics with promtool, runs a
# Prometheus of its own (own config, storage and port) scraping it every
# second with the shipped rules, and checks through the HTTP API:
#   - the engine's own counter and gpuspans' families come from one target;
#   - lane medians (classic buckets) are where the engine's GPU time puts
#     them, and the shipped recording rule has the decode p99;
#   - steps, kernel spans and device_up are as the engine runs.
# Installs Debian's prometheus and python3-prometheus-client when missing,
# as root. Bounded: about a minute, every wait with a limit.
#
# Usage: tools/e2e/python-prometheus.sh [path/to/libgpuspans.so]
#   (default: built with go build -buildmode=c-shared)
# Python: $PYTHON, default /usr/bin/python3 (Debian's, where the package is).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mkdir -p "$ARTIFACTS"

install_prometheus
PY="${PYTHON:-/usr/bin/python3}"
[[ -x "$PY" ]] || fail "no Python at $PY (set PYTHON)"
if ! "$PY" -c 'import prometheus_client' 2>/dev/null; then
  [[ "$PY" == /usr/bin/python3 ]] || fail "$PY has no prometheus_client: install it there"
  [[ $(id -u) -eq 0 ]] || fail "no prometheus_client: install it (apt-get install python3-prometheus-client) or run as root"
  log "installing python3-prometheus-client (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  if ! timeout 900 apt-get install -y python3-prometheus-client >"$TMP/apt.log" 2>&1; then
    timeout 300 apt-get update >>"$TMP/apt.log" 2>&1 || true
    timeout 900 apt-get install -y python3-prometheus-client >>"$TMP/apt.log" 2>&1 ||
      { tail -20 "$TMP/apt.log" >&2; fail "apt-get install python3-prometheus-client failed"; }
  fi
  "$PY" -c 'import prometheus_client' || fail "python3-prometheus-client installed, but $PY cannot import prometheus_client"
fi
log "prometheus_client $("$PY" -c 'import prometheus_client, importlib.metadata as m; print(m.version("prometheus_client"))' 2>/dev/null || echo '(version unknown)')"

LIB="${1:-}"
if [[ -z "$LIB" ]]; then
  command -v go >/dev/null || fail "no library given and no go to build one"
  (cd "$ROOT" && go build -buildmode=c-shared -o "$TMP/libgpuspans.so" ./go/capi) || fail "go build -buildmode=c-shared failed"
  LIB="$TMP/libgpuspans.so"
fi
[[ -f "$LIB" ]] || fail "$LIB: no such library"
# The compiled span calls, as the wheel carries them, where $PY has its
# headers; otherwise the engine runs the ctypes path (and logs so).
HOT=off
if bash "$ROOT/tools/python/hot.sh" "$TMP/_hot.abi3.so" "$PY" 2>"$TMP/hot.log"; then
  HOT="$TMP/_hot.abi3.so"
else
  log "the compiled span calls did not build ($(tail -1 "$TMP/hot.log")): the ctypes path"
fi

# The engine: prefill 800 us every 10 steps, decode 200 us every step, 100
# steps a second.
PREFILL_US=800
DECODE_US=200
PORT="$(free_port)"
ENGINE_LOG="$TMP/engine.log"
: >"$ENGINE_LOG"
GPUSPANS_LIB="$LIB" GPUSPANS_HOT="$HOT" PYTHONPATH="$ROOT/python" "$PY" "$ROOT/python/examples/prometheus_engine.py" \
  --port="$PORT" --rate=100 --prefill_us=$PREFILL_US --decode_us=$DECODE_US \
  --kernel_histograms --classic_buckets=8 >"$ENGINE_LOG" 2>&1 &
PIDS+=($!)
ENGINE_PID=$!
wait_for 20 "the engine's metrics URL" grep -q '^metrics: http://' "$ENGINE_LOG"
ENGINE="127.0.0.1:$PORT"
log "engine up at http://$ENGINE/metrics"

wait_for 20 "gpuspans lane histograms on the engine's /metrics" \
  bash -c "curl -fs --max-time 5 'http://$ENGINE/metrics' | grep -q '^gpuspans_lane_duration_seconds_bucket{device=\"0\",lane=\"decode\"'"
curl -fsS --max-time 5 "http://$ENGINE/metrics" >"$ARTIFACTS/python-engine-metrics.txt"
grep -q '^engine_requests_total ' "$ARTIFACTS/python-engine-metrics.txt" || fail "the engine's own counter is missing from its /metrics"
promtool check metrics <"$ARTIFACTS/python-engine-metrics.txt" >"$TMP/promtool.log" 2>&1 ||
  fail "promtool check metrics: $(cat "$TMP/promtool.log")"
log "promtool check metrics: ok ($(grep -c '^gpuspans_' "$ARTIFACTS/python-engine-metrics.txt") gpuspans samples beside the engine's own)"

EX="$ROOT/examples/observability"
PROM_PORT="$(free_port)"
PROM="http://127.0.0.1:$PROM_PORT"
mkdir -p "$TMP/prom"
cat >"$TMP/prom/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $EX/gpuspans.rules.yml
scrape_configs:
  - job_name: engine
    static_configs:
      - targets: ['$ENGINE']
YML
promtool check config "$TMP/prom/prometheus.yml" >/dev/null || fail "promtool check config"
prometheus --config.file="$TMP/prom/prometheus.yml" --storage.tsdb.path="$TMP/prom/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$TMP/prom/prometheus.log" 2>&1 &
PIDS+=($!)
wait_for 30 "Prometheus ready" curl -fs --max-time 2 -o /dev/null "$PROM/-/ready"

query() { curl -fsS --max-time 5 --get --data-urlencode "query=$1" "$PROM/api/v1/query"; }
# values EXPR LABEL: "labelvalue value" lines of an instant vector.
values() {
  query "$1" | grep -o "\"$2\":\"[^\"]*\"},\"value\":\[[0-9.e+-]*,\"[^\"]*\"" |
    sed "s/\"$2\":\"\([^\"]*\)\"},\"value\":\[[^,]*,\"\([^\"]*\)\"/\1 \2/"
}
scrapes_done() {
  local n
  n="$(query 'count_over_time(up{job="engine"}[1m])' | grep -o '"value":\[[^,]*,"[0-9]*"' | sed 's/.*,"\([0-9]*\)"/\1/')"
  [[ -n "$n" && "$n" -ge 12 ]]
}
wait_for 40 "12 scrapes of the engine" scrapes_done
[[ "$(values 'up{job="engine"}' job)" == "engine 1" ]] || fail "the engine's target is not up: $(query up)"

# One target: the engine's counter and gpuspans' families share job and instance.
[[ "$(values 'count by (instance) (engine_requests_total)' instance)" == "$ENGINE 1" ]] ||
  fail "engine_requests_total not scraped from $ENGINE: $(query engine_requests_total)"
[[ "$(values 'count by (instance) (gpuspans_steps_total)' instance)" == "$ENGINE 1" ]] ||
  fail "gpuspans_steps_total not scraped from $ENGINE: $(query gpuspans_steps_total)"

# Lane medians from the classic buckets (prometheus_client has no native
# histograms; 8 to a doubling here, 9% apart) against the hub's own
# last-minute median (gpuspans_lane_recent_duration_seconds, within 1.1%):
# within 12%. And that median against the engine's GPU time: never below
# it, and within 50% above (the simulated GPU is idle when a lane begins,
# so the host's time to its first launch is inside the span).
expr='histogram_quantile(0.5, sum by (le, lane) (rate(gpuspans_lane_duration_seconds_bucket[10s])))'
p50="$(values "$expr" lane)"
recent="$(values 'max by (lane) (gpuspans_lane_recent_duration_seconds{quantile="0.5"})' lane)"
echo "$p50" >"$ARTIFACTS/python-engine-lane-p50.txt"
for lw in "prefill $PREFILL_US" "decode $DECODE_US"; do
  read -r lane want_us <<<"$lw"
  got="$(awk -v l="$lane" '$1 == l {print $2}' <<<"$p50")"
  own="$(awk -v l="$lane" '$1 == l {print $2}' <<<"$recent")"
  [[ -n "$got" ]] || fail "no p50 for lane $lane: $(query "$expr")"
  [[ -n "$own" ]] || fail "no recent p50 for lane $lane: $(query 'gpuspans_lane_recent_duration_seconds')"
  awk -v g="$got" -v o="$own" 'BEGIN { exit !(g >= o / 1.12 && g <= o * 1.12) }' ||
    fail "lane $lane p50 from the classic buckets ${got}s is not within 12% of the hub's own ${own}s"
  awk -v o="$own" -v w="$want_us" 'BEGIN { exit !(o >= w / 1e6 && o <= 1.5 * w / 1e6) }' ||
    fail "lane $lane: the hub's p50 ${own}s is not within 0-50% above the engine's ${want_us}us"
  log "lane $lane p50 $(awk -v g="$got" 'BEGIN {printf "%.1f", g * 1e6}')us from the buckets, $(awk -v g="$own" 'BEGIN {printf "%.1f", g * 1e6}')us the hub's own (engine's GPU time ${want_us}us)"
done
P99=gpuspans:lane_duration_seconds:p99_1m
wait_for 20 "the shipped rule's decode p99" bash -c \
  "curl -fsS --max-time 5 --get --data-urlencode 'query=$P99{lane=\"decode\"}' '$PROM/api/v1/query' | grep -q '\"value\"'"
p99="$(values "$P99{lane=\"decode\"}" lane | awk '{print $2}')"
# The simulator runs work on the host clock: its tail carries the host's
# scheduling delays, so only the order of magnitude is checked.
awk -v g="$p99" -v w="$DECODE_US" 'BEGIN { exit !(g >= 0.8 * w / 1e6 && g <= 10 * w / 1e6) }' ||
  fail "recorded decode p99 ${p99}s is not between 0.8 and 10 times the engine's ${DECODE_US}us"
log "recorded decode p99 (shipped rule, the hub's 1-minute summary): $(awk -v g="$p99" 'BEGIN {printf "%.1f", g * 1e6}')us"

steps="$(values 'sum by (job) (rate(gpuspans_steps_total[5s]))' job | awk '{print $2}')"
awk -v s="$steps" 'BEGIN { exit !(s >= 50 && s <= 110) }' || fail "steps rate $steps/s, want about 100"
kernels="$(values 'sum by (kernel) (rate(gpuspans_kernel_duration_seconds_count[5s]))' kernel | awk '$1 == "attention" {print $2}')"
awk -v k="$kernels" 'BEGIN { exit !(k >= 12 && k <= 28) }' || fail "attention kernel spans $kernels/s, want about 25 (1 step in 4)"
[[ "$(values 'max by (device) (gpuspans_device_up)' device)" == "0 1" ]] || fail "gpuspans_device_up is not 1: $(query gpuspans_device_up)"
log "steps ${steps}/s, attention kernel spans ${kernels}/s, device 0 up"

kill -TERM "$ENGINE_PID"
wait_for 10 "the engine to exit on SIGTERM" bash -c "! kill -0 $ENGINE_PID 2>/dev/null"
log "PASS in $((SECONDS - E2E_START))s"
