#!/usr/bin/env bash
# End-to-end: a real Prometheus scrapes the demo. Starts the demo (the
# binary given as $1, or one built with go build) on a loopback port with
# the simulated GPU and known kernel durations, checks its /metrics with
# promtool, runs a Prometheus of its own (its own config, storage and port;
# Debian's service is left alone) scraping the demo every second, and
# checks through the HTTP API that the lanes' median from
# histogram_quantile over the scraped buckets is where the configured
# kernel durations put it. Installs Debian's prometheus when missing, as
# root.
#
# Usage: tools/e2e/prometheus.sh [path/to/gpuspans]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mkdir -p "$ARTIFACTS"

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
  # Keep the package's service from starting: we run our own instance.
  # policy-rc.d is the Debian way to say "do not start services" during an
  # install; it is removed again only if this script created it.
  created_policy=""
  if [[ $(id -u) -eq 0 && ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    created_policy=1
  fi
  # Without recommends: they would pull in exporters we do not use.
  apt_install prometheus prometheus --no-install-recommends
  [[ -n "$created_policy" ]] && rm -f /usr/sbin/policy-rc.d
  command -v promtool >/dev/null || fail "prometheus installed without promtool"
fi
log "$(prometheus --version 2>&1 | head -1)"

BIN="$(gpuspans_bin "${1:-}")"
# The lanes' GPU time per step: prefill 60+450+350 = 860 us; decode
# 90+70+25 us of kernels plus the 15+10+10 us graph replayed in it = 220 us.
PREFILL_US=860
DECODE_US=220
start_demo "$BIN" --rate=100 --jitter=0.2 \
  --prefill=embed=60us,attn_prefill=450us,mlp_prefill=350us \
  --decode=attn_decode=90us,mlp_decode=70us,sample=25us \
  --graph=norm=15us,rope=10us,residual=10us

# /metrics passes promtool's exposition checks (format and lint).
wait_for 20 "lane histograms on /metrics" \
  bash -c "curl -fs --max-time 5 '$DEMO_URL/metrics' | grep -q '^gpuspans_lane_duration_seconds_bucket{device=\"0\",lane=\"decode\"'"
curl -fsS --max-time 5 "$DEMO_URL/metrics" >"$ARTIFACTS/metrics.txt"
promtool check metrics <"$ARTIFACTS/metrics.txt" >"$TMP/promtool.log" 2>&1 ||
  fail "promtool check metrics: $(cat "$TMP/promtool.log")"
log "promtool check metrics: ok ($(grep -c '^gpuspans_' "$ARTIFACTS/metrics.txt") gpuspans samples)"

PROM_PORT="$(free_port)"
PROM="http://127.0.0.1:$PROM_PORT"
cat >"$TMP/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gpuspans
    static_configs:
      - targets: ['${DEMO_URL#http://}']
YML
promtool check config "$TMP/prometheus.yml" >/dev/null || fail "promtool check config"
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$TMP/prometheus.log" 2>&1 &
PIDS+=($!)
wait_for 30 "Prometheus ready on $PROM" curl -fs --max-time 2 -o /dev/null "$PROM/-/ready"
log "prometheus up at $PROM"

# query EXPR: the instant query's JSON, through the HTTP API.
query() { curl -fsS --max-time 5 --get --data-urlencode "query=$1" "$PROM/api/v1/query"; }
# values EXPR LABEL: "labelvalue value" lines of an instant vector.
values() {
  query "$1" | grep -o "\"$2\":\"[^\"]*\"},\"value\":\[[0-9.e+-]*,\"[^\"]*\"" |
    sed "s/\"$2\":\"\([^\"]*\)\"},\"value\":\[[^,]*,\"\([^\"]*\)\"/\1 \2/"
}
scrapes_done() {
  local n
  n="$(query 'count_over_time(up{job="gpuspans"}[1m])' | grep -o '"value":\[[^,]*,"[0-9]*"' | sed 's/.*,"\([0-9]*\)"/\1/')"
  [[ -n "$n" && "$n" -ge 6 ]]
}
wait_for 40 "6 scrapes of the demo" scrapes_done
[[ "$(values 'up{job="gpuspans"}' job)" == "gpuspans 1" ]] || fail "target not up: $(query 'up')"

expr='histogram_quantile(0.5, sum by (le, lane) (rate(gpuspans_lane_duration_seconds_bucket[5s])))'
log "querying $expr"
p50="$(values "$expr" lane)"
echo "$p50" >"$ARTIFACTS/lane-p50.txt"
[[ -n "$p50" ]] || fail "no result for $expr: $(query "$expr")"
# Prometheus interpolates within the hub's 1-2-5 buckets, so a median is
# only known to within a bucket's width: 2.5x either way of the configured
# GPU time (jitter is +-20%).
check_lane() {
  local lane=$1 want_us=$2 got
  got="$(awk -v l="$lane" '$1 == l {print $2}' <<<"$p50")"
  [[ -n "$got" ]] || fail "no p50 for lane $lane in: $p50"
  awk -v g="$got" -v w="$want_us" 'BEGIN { exit !(g >= w / 2.5e6 && g <= w * 2.5 / 1e6) }' ||
    fail "lane $lane p50 ${got}s is not within 2.5x of the configured ${want_us}us"
  log "lane $lane: p50 $(awk -v g="$got" 'BEGIN {printf "%.0f", g * 1e6}')us (configured GPU time ${want_us}us)"
}
check_lane prefill "$PREFILL_US"
check_lane decode "$DECODE_US"

# The prefill lane is the slower one, as configured.
awk '$1 == "prefill" {p = $2} $1 == "decode" {d = $2} END {exit !(p > d)}' <<<"$p50" ||
  fail "prefill p50 is not above decode p50: $p50"

# The shipped examples: the config and rules are valid, and every query of
# the Grafana dashboard parses and returns data from this Prometheus.
EX="$ROOT/examples/observability"
promtool check config "$EX/prometheus.yml" >/dev/null || fail "promtool check config $EX/prometheus.yml"
promtool check rules "$EX/gpuspans.rules.yml" >/dev/null || fail "promtool check rules $EX/gpuspans.rules.yml"
n=0
while IFS= read -r e; do
  e="${e//\\\"/\"}"
  e="${e//\$job/.*}"
  e="${e//\$instance/.*}"
  e="${e//\$device/.*}"
  e="${e//\$__rate_interval/5s}"
  e="${e//\$__range/1m}"
  r="$(query "$e")" || fail "dashboard query refused: $e"
  grep -q '"result":\[{' <<<"$r" || fail "dashboard query returned nothing: $e: $r"
  n=$((n + 1))
done < <(grep -oP '"expr": "\K(?:[^"\\]|\\.)*' "$EX/grafana-dashboard.json")
((n >= 10)) || fail "only $n queries found in the dashboard"
log "examples: config and rules valid; all $n dashboard queries return data"

steps="$(values 'sum by (job) (rate(gpuspans_steps_total[5s]))' job | awk '{print $2}')"
awk -v s="$steps" 'BEGIN { exit !(s >= 50 && s <= 110) }' || fail "steps rate $steps/s, want about 100"
log "steps: ${steps}/s (configured 100)"
[[ "$(values 'max by (device) (gpuspans_device_up)' device)" == "0 1" ]] || fail "gpuspans_device_up is not 1: $(query gpuspans_device_up)"
log "PASS in $((SECONDS - E2E_START))s"
