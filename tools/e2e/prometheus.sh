#!/usr/bin/env bash
# End-to-end: a real Prometheus scrapes the demo (the binary given as $1, or
# one built with go build; simulated GPU, loopback ports). Every Prometheus
# here is one of its own (own config, storage and port; Debian's service is
# left alone), scraping every second, one with native histograms on and one
# storing the classic buckets (Debian's 2.42 has no
# scrape_classic_histograms to keep both in one).
#
# First the series budget (docs/operations.md, go/export/prom's package documentation):
# a demo with the defaults and one with 64 kernels and --kernel_histograms
# are scraped until steady, and each server's count of their gpuspans_*
# series (count({job=...}), through the API) must stay within the budget;
# the default demo's classic lane medians must be within the default
# buckets' bound (a factor of 2) of the configured GPU time.
#
# Then the demo with known kernel durations, --kernel_histograms,
# --classic_buckets=8 (9% buckets) and --otlp to a small OTLP/HTTP sink of
# ours (python3: it records the trace and span id, name and duration of
# every span it gets), with the shipped rules and exemplar storage on:
#   - /metrics passes promtool's checks;
#   - both servers hold exemplars on the lane histograms
#     (/api/v1/query_exemplars), and each one's trace_id and span_id are
#     those of a lane span the sink received, of that lane, with its value
#     that span's duration;
#   - lane medians are where the configured kernel durations put them;
#   - the shipped rules pass their unit tests, the dashboard parses and
#     imports cleanly, and its every query returns data from both servers;
#   - decode made 20% slower mid-run (/control/sim) moves the recorded p99
#     (gpuspans:lane_duration_seconds:p99_1m), native and classic, by at
#     least 15% within 2 minutes;
#   - with spans then stopped (level off), PromQL p50 and p99 over all the
#     landed spans are within 10% of the exact quantiles of those same
#     spans, read from the demo's timeline trace.
# A demo with --tenants: its whose-GPU-time series within their budget,
# the shipped rules give each tenant's GPU seconds per million tokens, the
# heaviest tenant reads heaviest, and the classes add up to the lanes.
# Beside it, the windows demo with --kernel_histograms and a native and a
# classic server of its own: the dashboard's kernel p99 and gap p50 and p99
# on the classic server must be within 5% of the native server's, and
# within 10% of the native histograms' quantiles over the last minute.
# Installs Debian's prometheus when missing, as root; needs python3. Bounded:
# about 4 minutes, every wait with a limit.
#
# Usage: tools/e2e/prometheus.sh [path/to/gpuspans]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
mkdir -p "$ARTIFACTS"

install_prometheus
command -v python3 >/dev/null || fail "python3 not found: the OTLP sink and the exemplar checks need it"

BIN="$(gpuspans_bin "${1:-}")"
EX="$ROOT/examples/observability"

# start_prometheus NAME RULES JOB=HOST:PORT... [-- FLAGS...]: a Prometheus
# scraping each target every second as its job, with RULES (or none: -);
# sets the NAME variable to its URL.
start_prometheus() {
  local name=$1 rules=$2 port dir="$TMP/$1"
  shift 2
  mkdir -p "$dir"
  {
    printf 'global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n'
    [[ $rules == - ]] || printf 'rule_files:\n  - %s\n' "$rules"
    printf 'scrape_configs:\n'
    while (($#)) && [[ $1 != -- ]]; do
      printf '  - job_name: %s\n    static_configs:\n      - targets: [%s]\n' "${1%%=*}" "'${1#*=}'"
      shift
    done
  } >"$dir/prometheus.yml"
  (($#)) && shift
  promtool check config "$dir/prometheus.yml" >/dev/null || fail "promtool check config ($name): $(cat "$dir/prometheus.yml")"
  # A port taken between free_port and the bind ends the server at once:
  # then a new port, up to three times; any other end fails with its log.
  local try pid deadline
  for try in 1 2 3; do
    port="$(free_port)"
    prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb$try" \
      --web.listen-address="127.0.0.1:$port" --log.level=warn "$@" >"$dir/prometheus.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    printf -v "$name" '%s' "http://127.0.0.1:$port"
    deadline=$((SECONDS + 60))
    until curl -fs --max-time 2 -o /dev/null "http://127.0.0.1:$port/-/ready"; do
      if ! kill -0 "$pid" 2>/dev/null; then
        grep -q "address already in use" "$dir/prometheus.log" && ((try < 3)) && continue 2
        fail "Prometheus $name (port $port) exited before ready: $(tail -n 20 "$dir/prometheus.log")"
      fi
      ((SECONDS < deadline)) || fail "timed out after 60s waiting for Prometheus $name ready on port $port: $(tail -n 20 "$dir/prometheus.log")"
      sleep 0.2
    done
    return 0
  done
}
# stop PID: ends one process this script started, with a bound.
stop() {
  kill "$1" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$1" 2>/dev/null || true
}

# query PROM EXPR: the instant query's JSON, through the HTTP API.
query() { curl -fsS --max-time 5 --get --data-urlencode "query=$2" "$1/api/v1/query"; }
# values PROM EXPR LABEL: "labelvalue value" lines of an instant vector.
values() {
  query "$1" "$2" | grep -o "\"$3\":\"[^\"]*\"},\"value\":\[[0-9.e+-]*,\"[^\"]*\"" |
    sed "s/\"$3\":\"\([^\"]*\)\"},\"value\":\[[^,]*,\"\([^\"]*\)\"/\1 \2/"
}
# value PROM EXPR LABEL WANT: the value of the series whose LABEL is WANT.
value() { values "$1" "$2" "$3" | awk -v w="$4" '$1 == w {print $2}'; }
# scalar PROM EXPR: the value of a one-element vector without labels.
scalar() { query "$1" "$2" | grep -o '"value":\[[^,]*,"[^"]*"' | sed 's/.*,"\([^"]*\)"/\1/'; }
# scrapes_done PROM JOB N: whether PROM has scraped JOB N times in the last minute.
scrapes_done() {
  local n
  n="$(scalar "$1" "count_over_time(up{job=\"$2\"}[1m])")"
  [[ -n "$n" && "$n" -ge "$3" ]]
}

# The series budget: what a fleet pays per GPU (each demo runs one GPU),
# as two real Prometheus servers store it. Default: lane histograms only;
# then 64 kernels, each timed on armed steps, with --kernel_histograms.
BUDGET_NATIVE=30 BUDGET_CLASSIC=85 BUDGET_K64_NATIVE=380 BUDGET_K64_CLASSIC=2200
BUDGET_WIN_NATIVE=62 BUDGET_WIN_CLASSIC=145
# Whose GPU time adds at most 109 native and 325 classic series a GPU
# (go/export/prom's budget: 8 classes and "other", 2 lanes).
BUDGET_TEN_NATIVE=$((BUDGET_NATIVE + 109)) BUDGET_TEN_CLASSIC=$((BUDGET_CLASSIC + 325))
k64() { local i l=""; for i in $(seq -w 1 32); do l+="$1$i=5us,"; done; echo "${l%,}"; }
DEMO_NAME=default start_demo "$BIN" --rate=100 --status_every=-1
DEFAULT_DEMO="${DEMO_URL#http://}" DEFAULT_PID="${PIDS[-1]}"
DEMO_NAME=k64 start_demo "$BIN" --rate=100 --status_every=-1 --kernel_histograms --graph= \
  --prefill="$(k64 p)" --decode="$(k64 d)"
K64_DEMO="${DEMO_URL#http://}" K64_PID="${PIDS[-1]}"
# Kernel windows on the simulator's tracer, 10 a second: their own series
# and GPU time's; 1.5 ms of host work before the decode lane's graph
# replay outlasts the GPU's queue (860 us of prefill, 185 us of decode)
# and leaves it idle for part of the lane.
DEMO_NAME=windows start_demo "$BIN" --rate=100 --status_every=-1 --kernel_timing=auto --kernel_window_every=100ms --host_gap=1500us
WIN_DEMO="${DEMO_URL#http://}" WIN_PID="${PIDS[-1]}"
# Whose GPU time: requests from 3 tenants said to the hub every step, t1's
# with long prompts and contexts, each lane's batch work growing with them.
DEMO_NAME=tenants start_demo "$BIN" --rate=100 --status_every=-1 --tenants=3
TEN_DEMO="${DEMO_URL#http://}" TEN_PID="${PIDS[-1]}"
# The rules are loaded for GPU time's dashboard queries below; their
# series are named gpuspans:..., outside the counts.
start_prometheus COUNT_NATIVE "$EX/gpuspans.rules.yml" default="$DEFAULT_DEMO" k64="$K64_DEMO" windows="$WIN_DEMO" tenants="$TEN_DEMO" -- --enable-feature=native-histograms
COUNT_NATIVE_PID="${PIDS[-1]}"
start_prometheus COUNT_CLASSIC "$EX/gpuspans.rules.yml" default="$DEFAULT_DEMO" k64="$K64_DEMO" windows="$WIN_DEMO" tenants="$TEN_DEMO"
COUNT_CLASSIC_PID="${PIDS[-1]}"
for p in "$COUNT_NATIVE" "$COUNT_CLASSIC"; do
  for job in default k64 windows tenants; do
    # 10 scrapes: every step armed for kernel spans has run by then, and
    # every series that appears at its first count has appeared.
    wait_for 40 "10 scrapes of $job by $p" scrapes_done "$p" "$job" 10
  done
done
: >"$ARTIFACTS/series.txt"
for form in native classic; do
  if [[ $form == native ]]; then p=$COUNT_NATIVE; else p=$COUNT_CLASSIC; fi
  for job in default k64 windows tenants; do
    sel="job=\"$job\",__name__=~\"gpuspans_.+\""
    total="$(scalar "$p" "count({$sel})")"
    per_device="$(scalar "$p" "count({$sel,device!=\"\"})")"
    kernels="$(scalar "$p" "count(count by (kernel) ({$sel,kernel!=\"\"}))" || true)"
    all="$(scalar "$p" "count({job=\"$job\"})")"
    if [[ $job == default ]]; then
      budget=$BUDGET_CLASSIC
      [[ $form == native ]] && budget=$BUDGET_NATIVE
      [[ -z "$kernels" ]] || fail "$form: the default demo exports kernel series ($kernels kernels)"
    elif [[ $job == windows ]]; then
      budget=$BUDGET_WIN_CLASSIC
      [[ $form == native ]] && budget=$BUDGET_WIN_NATIVE
    elif [[ $job == tenants ]]; then
      budget=$BUDGET_TEN_CLASSIC
      [[ $form == native ]] && budget=$BUDGET_TEN_NATIVE
    else
      budget=$BUDGET_K64_CLASSIC
      [[ $form == native ]] && budget=$BUDGET_K64_NATIVE
      [[ "$kernels" == 64 ]] || fail "$form: $kernels kernels with series from the 64-kernel demo, want 64"
    fi
    line="$form, $job demo: $total gpuspans_* series for its one GPU ($per_device with a device label, $((total - per_device)) hub-wide; $all with the Go runtime's and the process's); budget $budget"
    echo "$line" >>"$ARTIFACTS/series.txt"
    values "$p" "count by (__name__) ({$sel})" __name__ | sort >"$ARTIFACTS/series-$form-$job.txt"
    log "series: $line"
    [[ -n "$total" && "$total" -le "$budget" ]] || fail "series over budget: $line"
  done
done
# No gpuspans_ series reads zero but those that must exist before they count
# (package prom's documentation). Histograms are left out: classic bucket
# series below a lane's fastest span are the layout, and 2.42 lets native
# histograms through a comparison with a number.
zeros="$(values "$COUNT_NATIVE" "count by (__name__) ({job=\"default\",__name__=~\"gpuspans_.+\",__name__!~\".*_duration_seconds(_bucket|_sum|_count)?\"} == 0)" __name__ |
  awk '{print $1}' | grep -vxE 'gpuspans_(spans_in_flight|event_offset_seconds|spans_begun_total|spans_landed_total|harvest_seconds_total)' || true)"
[[ -z "$zeros" ]] || fail "series at zero on the default demo: $zeros"
# The default classic buckets (2 apart): lane medians within a factor of 2
# of the default kernels' GPU time (prefill 60+450+350 us, decode 90+70+25
# us and its 35 us graph).
for lw in "prefill 860" "decode 220"; do
  read -r lane want_us <<<"$lw"
  got="$(value "$COUNT_CLASSIC" "histogram_quantile(0.5, sum by (le, lane) (rate(gpuspans_lane_duration_seconds_bucket{job=\"default\"}[10s])))" lane "$lane")"
  awk -v g="$got" -v w="$want_us" 'BEGIN { exit !(g != "" && g >= 0.5 * w / 1e6 && g <= 2 * w / 1e6) }' ||
    fail "default classic buckets: lane $lane p50 '${got}'s is not within a factor of 2 of ${want_us}us"
  log "default classic buckets: lane $lane p50 $(awk -v g="$got" 'BEGIN {printf "%.1f", g * 1e6}')us (configured ${want_us}us; bound: a factor of 2)"
done
# GPU time's dashboard panels return data from the windows demo, native
# and classic (the rest of the dashboard is checked on the demo below).
gpu_panels=0
for p in "$COUNT_NATIVE" "$COUNT_CLASSIC"; do
  wait_for 30 "the recorded busy ratio on $p" bash -c "curl -fs --max-time 5 --get --data-urlencode 'query=gpuspans:lane_busy_ratio:10m{job=\"windows\",lane=\"decode\"}' '$p/api/v1/query' | grep -q '\"result\":\[{'"
  while IFS= read -r e; do
    e="${e//\\\"/\"}"
    case "$e" in *lane_busy_* | *kernel_gap_* | *lane_kernel_share*) ;; *) continue ;; esac
    e="${e//\$job/windows}"
    e="${e//\$instance/.*}"
    e="${e//\$device/.*}"
    e="${e//\$lane/.*}"
    r="$(query "$p" "$e")" || fail "GPU time dashboard query refused by $p: $e"
    grep -q '"result":\[{' <<<"$r" || fail "GPU time dashboard query returned nothing from the windows demo on $p: $e: $r"
    gpu_panels=$((gpu_panels + 1))
  done < <(grep -oP '"expr": "\K(?:[^"\\]|\\.)*' "$EX/grafana-dashboard.json")
done
((gpu_panels == 8)) || fail "$gpu_panels GPU time dashboard queries checked, want 4 on each server"
ratio="$(value "$COUNT_NATIVE" 'gpuspans:lane_busy_ratio:10m{job="windows"}' lane decode)"
# Decode: from the prefill's end (860 us in) its 185 us of kernels, then
# idle until the host's 1.5 ms are up, then the 35 us graph: busy about 220
# us of 675 (0.24-0.53 with the jitter's spread).
awk -v r="$ratio" 'BEGIN { exit !(r != "" && r > 0.15 && r < 0.8) }' || fail "the windows demo's decode busy ratio '$ratio': want about 0.33 (220 us of kernels in a 675 us lane)"
log "GPU time: the windows demo's decode lane busy $ratio of its time; $gpu_panels dashboard queries return data"
# Whose GPU time through Prometheus's own queries and the shipped rules:
# every tenant's GPU seconds per million input and output tokens, t1's
# long prompts and contexts the heaviest, and the classes' GPU seconds
# adding up to the lanes' time split, in one scrape.
wait_for 30 "the tenants' GPU seconds per million tokens" bash -c \
  "curl -fs --max-time 5 --get --data-urlencode 'query=count(gpuspans:request_gpu_seconds_per_million_tokens:rate5m{job=\"tenants\"}) == 6' '$COUNT_NATIVE/api/v1/query' | grep -q '\"result\":\[{'"
declare -A tshare
for t in t1 t2 t3; do
  tshare[$t]="$(value "$COUNT_NATIVE" 'tenant:gpuspans_request_gpu_seconds:rate5m{job="tenants"}' tenant "$t")"
done
awk -v a="${tshare[t1]}" -v b="${tshare[t2]}" -v c="${tshare[t3]}" 'BEGIN { exit !(a > 0 && b > 0 && c > 0 && a > b && a > c) }' ||
  fail "tenants' GPU seconds a second: t1 ${tshare[t1]}, t2 ${tshare[t2]}, t3 ${tshare[t3]}: want t1, the long prompts and contexts, the heaviest"
split="$(scalar "$COUNT_NATIVE" 'sum(gpuspans_lane_split_seconds_total{job="tenants"})')"
classes="$(scalar "$COUNT_NATIVE" 'sum(gpuspans_request_gpu_seconds_total{job="tenants"})')"
awk -v s="$split" -v c="$classes" 'BEGIN { d = s - c; if (d < 0) d = -d; exit !(s > 0 && d <= 1e-6 * s) }' ||
  fail "tenants: the classes' GPU seconds $classes do not add up to the lanes' time split $split"
# The demo's lanes run on the simulator in real time beside three other
# demos: how well their composition explains them depends on the load, so
# the status is logged, not required (go/gpuspans' tests hold the fit).
models="$(values "$COUNT_NATIVE" 'count by (lane) (gpuspans_lane_cost_model_info{job="tenants"})' lane | awk '{print $1}' | sort | paste -sd' ')"
[[ "$models" == "decode prefill" ]] || fail "tenants: cost models for lanes '$models', want decode and prefill"
statuses="$(values "$COUNT_NATIVE" 'count by (status) (gpuspans_lane_cost_model_info{job="tenants"})' status | awk '{print $1 " x" $2}' | paste -sd' ')"
log "whose GPU time: GPU seconds a second t1 ${tshare[t1]}, t2 ${tshare[t2]}, t3 ${tshare[t3]}; the classes' $classes s add up to the lanes' split $split s; cost models $statuses"
for pid in "$DEFAULT_PID" "$K64_PID" "$WIN_PID" "$TEN_PID" "$COUNT_NATIVE_PID" "$COUNT_CLASSIC_PID"; do stop "$pid"; done

# Kernel and gap quantiles on a classic-only server: the windows demo with
# kernel histograms, scraped by a native server and a classic one of its
# own, read once the demo below has run its minute.
DEMO_NAME=wincmp start_demo "$BIN" --rate=100 --status_every=-1 --kernel_timing=auto --kernel_window_every=100ms \
  --host_gap=1500us --kernel_histograms
WCMP_DEMO="${DEMO_URL#http://}"
start_prometheus WCMP_NATIVE "$EX/gpuspans.rules.yml" windows="$WCMP_DEMO" -- --enable-feature=native-histograms
start_prometheus WCMP_CLASSIC "$EX/gpuspans.rules.yml" windows="$WCMP_DEMO"

# The OTLP sink the demo sends its traces to.
SINK_SPANS="$TMP/sink-spans.txt"
: >"$SINK_SPANS"
python3 "$ROOT/tools/e2e/otlpsink.py" "$TMP/sink.port" "$SINK_SPANS" 2>"$TMP/sink.log" &
PIDS+=($!)
wait_for 10 "the OTLP sink's port" test -s "$TMP/sink.port"
SINK="http://127.0.0.1:$(cat "$TMP/sink.port")"
# The lanes' GPU time per step: prefill 60+450+350 = 860 us; decode
# 90+70+25 us of kernels plus the 15+10+10 us graph replayed in it = 220 us.
PREFILL_US=860
DECODE_US=220
TRACE="$TMP/trace.json"
start_demo "$BIN" --rate=100 --jitter=0.2 --trace="$TRACE" --trace_spans=1000000 \
  --kernel_histograms --classic_buckets=8 --otlp="$SINK" \
  --prefill=embed=60us,attn_prefill=450us,mlp_prefill=350us \
  --decode=attn_decode=90us,mlp_decode=70us,sample=25us \
  --graph=norm=15us,rope=10us,residual=10us
DEMO_PID="${PIDS[-1]}"
DEMO_STARTED=$SECONDS

# /metrics passes promtool's exposition checks (format and lint).
wait_for 20 "lane histograms on /metrics" \
  bash -c "curl -fs --max-time 5 '$DEMO_URL/metrics' | grep -q '^gpuspans_lane_duration_seconds_bucket{device=\"0\",lane=\"decode\"'"
curl -fsS --max-time 5 "$DEMO_URL/metrics" >"$ARTIFACTS/metrics.txt"
promtool check metrics <"$ARTIFACTS/metrics.txt" >"$TMP/promtool.log" 2>&1 ||
  fail "promtool check metrics: $(cat "$TMP/promtool.log")"
log "promtool check metrics: ok ($(grep -c '^gpuspans_' "$ARTIFACTS/metrics.txt") gpuspans samples)"

start_prometheus NATIVE "$EX/gpuspans.rules.yml" gpuspans="${DEMO_URL#http://}" -- --enable-feature=native-histograms,exemplar-storage
start_prometheus CLASSIC "$EX/gpuspans.rules.yml" gpuspans="${DEMO_URL#http://}" -- --enable-feature=exemplar-storage
log "prometheus up: native histograms at $NATIVE, classic at $CLASSIC"
for p in "$NATIVE" "$CLASSIC"; do
  wait_for 40 "6 scrapes of the demo by $p" scrapes_done "$p" gpuspans 6
  [[ "$(values "$p" 'up{job="gpuspans"}' job)" == "gpuspans 1" ]] || fail "target not up on $p: $(query "$p" up)"
done
# The native server holds native histograms, the classic one buckets.
query "$NATIVE" 'gpuspans_lane_duration_seconds{lane="decode"}' | grep -q '"histogram":\[' ||
  fail "no native histogram on $NATIVE: $(query "$NATIVE" 'gpuspans_lane_duration_seconds{lane="decode"}' | head -c 300)"
[[ -n "$(value "$CLASSIC" 'count(gpuspans_lane_duration_seconds_bucket{lane="decode"}) by (lane)' lane decode)" ]] ||
  fail "no classic buckets on $CLASSIC"

# Lane medians where the configured GPU time puts them (jitter is +-20%
# per kernel, and decode's graph replay has none).
NATIVE_Q='histogram_quantile(%s, sum by (lane) (rate(gpuspans_lane_duration_seconds[10s])))'
CLASSIC_Q='histogram_quantile(%s, sum by (le, lane) (rate(gpuspans_lane_duration_seconds_bucket[10s])))'
for form in native classic; do
  if [[ $form == native ]]; then p=$NATIVE q=$NATIVE_Q; else p=$CLASSIC q=$CLASSIC_Q; fi
  # shellcheck disable=SC2059
  expr="$(printf "$q" 0.5)"
  p50="$(values "$p" "$expr" lane)"
  echo "$p50" >"$ARTIFACTS/lane-p50-$form.txt"
  for lw in "prefill $PREFILL_US" "decode $DECODE_US"; do
    read -r lane want_us <<<"$lw"
    got="$(awk -v l="$lane" '$1 == l {print $2}' <<<"$p50")"
    [[ -n "$got" ]] || fail "$form: no p50 for lane $lane from $expr: $(query "$p" "$expr")"
    awk -v g="$got" -v w="$want_us" 'BEGIN { exit !(g >= 0.8 * w / 1e6 && g <= 1.25 * w / 1e6) }' ||
      fail "$form: lane $lane p50 ${got}s is not within 20% of the configured ${want_us}us"
    log "$form: lane $lane p50 $(awk -v g="$got" 'BEGIN {printf "%.1f", g * 1e6}')us (configured GPU time ${want_us}us)"
  done
done

# Exemplars: each server holds, for each lane, exemplars whose trace_id and
# span_id are those of a lane span of that lane the OTLP sink received, with
# that span's duration as value: a p99 spike opens a trace the tracing
# backend has. (Prometheus reads them from OpenMetrics on the classic
# server and from the protobuf format on the native one.)
EX_FROM=$(($(date +%s) - 600))
# exemplars PROM SELECTOR: "lane trace_id span_id value" lines.
exemplars() {
  curl -fsS --max-time 5 --get --data-urlencode "query=$2" --data-urlencode "start=$EX_FROM" \
    --data-urlencode "end=$(($(date +%s) + 60))" "$1/api/v1/query_exemplars" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["data"]:
    for e in s["exemplars"]:
        print(s["seriesLabels"]["lane"], e["labels"].get("trace_id", "-"), e["labels"].get("span_id", "-"), e["value"])'
}
# exemplars_checked PROM SELECTOR: every exemplar matches a lane span the
# sink received, and both lanes have one; writes them to $TMP/ex.
exemplars_checked() {
  exemplars "$1" "$2" >"$TMP/ex" || return 1
  python3 - "$TMP/ex" "$SINK_SPANS" <<'PY'
import sys
sent = {}
for line in open(sys.argv[2]):
    trace, span, dur, name = line.rstrip("\n").split(" ", 3)
    sent[(trace, span)] = (int(dur), name)
lanes = set()
for line in open(sys.argv[1]):
    lane, trace, span, value = line.split()
    got = sent.get((trace, span))
    if got is None or got[1] != "lane " + lane or abs(got[0] - float(value) * 1e9) > 1:
        print("exemplar %s: the sink got %s" % (line.strip(), got), file=sys.stderr)
        sys.exit(2)
    lanes.add(lane)
sys.exit(0 if lanes == {"prefill", "decode"} else 1)
PY
  local rc=$?
  ((rc != 2)) || fail "an exemplar on $1 that no span the OTLP sink received matches: $(cat "$TMP/ex")"
  return $rc
}
for form in native classic; do
  if [[ $form == native ]]; then
    p=$NATIVE sel='gpuspans_lane_duration_seconds{job="gpuspans"}'
  else
    p=$CLASSIC sel='gpuspans_lane_duration_seconds_bucket{job="gpuspans"}'
  fi
  wait_for 30 "$form: exemplars of both lanes that match spans the OTLP sink got" exemplars_checked "$p" "$sel"
  log "$form: $(wc -l <"$TMP/ex") exemplars on the lane histograms, each a lane span the OTLP sink received (trace and span id, lane, duration); e.g. $(head -1 "$TMP/ex")"
done
cp "$TMP/ex" "$ARTIFACTS/exemplars.txt"

# The shipped examples: the config is valid, the rules pass their unit
# tests, the dashboard is JSON that imports through __inputs (no
# hard-coded data source), and every query of it returns data from both
# servers: the native form and the classic fallback.
promtool check config "$EX/prometheus.yml" >/dev/null || fail "promtool check config $EX/prometheus.yml"
promtool check rules "$EX/gpuspans.rules.yml" >/dev/null || fail "promtool check rules $EX/gpuspans.rules.yml"
python3 "$EX/latency_series.py" --check || fail "$EX/gpuspans.latency*.test.yml are not what latency_series.py writes"
promtool check rules "$EX/gpuspans.hostbound.rules.yml" >/dev/null || fail "promtool check rules $EX/gpuspans.hostbound.rules.yml"
RULE_TESTS=(gpuspans.rules.test.yml gpuspans.latency.test.yml gpuspans.latency.5s.test.yml gpuspans.latency.15s.test.yml
  gpuspans.latency.rollout.test.yml gpuspans.latency.rollout.5s.test.yml gpuspans.latency.rollout.15s.test.yml
  gpuspans.hostbound.test.yml)
# Every rule test beside the rules runs: a new one must be named above.
for f in "$EX"/*.test.yml; do
  [[ " ${RULE_TESTS[*]} " == *" ${f##*/} "* ]] || fail "$f is not in prometheus.sh's RULE_TESTS: add it"
done
(cd "$EX" && promtool test rules "${RULE_TESTS[@]}") >"$TMP/rules-test.log" 2>&1 ||
  fail "promtool test rules: $(cat "$TMP/rules-test.log")"
DASH="$EX/grafana-dashboard.json"
if command -v python3 >/dev/null; then
  python3 - "$DASH" <<'PY' || fail "dashboard $DASH does not import cleanly"
import json, sys
d = json.load(open(sys.argv[1]))
ins = [i["name"] for i in d.get("__inputs", []) if i.get("type") == "datasource" and i.get("pluginId") == "prometheus"]
assert ins, "no Prometheus data source in __inputs"
def walk(o):
    if isinstance(o, dict):
        ds = o.get("datasource")
        if isinstance(ds, dict):
            assert ds.get("uid") in ["${%s}" % n for n in ins], "hard-coded data source %r" % ds
        for v in o.values():
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(d)
assert any(p.get("type") == "heatmap" and p.get("repeat") == "lane" for p in d["panels"]), "no heatmap repeated per lane"
PY
elif command -v jq >/dev/null; then
  jq -e '.__inputs | length > 0' "$DASH" >/dev/null || fail "dashboard $DASH: not JSON, or no __inputs"
else
  fail "neither python3 nor jq to check $DASH"
fi
for p in "$NATIVE" "$CLASSIC"; do
  n=0 windows_only=0
  while IFS= read -r e; do
    e="${e//\\\"/\"}"
    e="${e//\$job/.*}"
    e="${e//\$instance/.*}"
    e="${e//\$device/.*}"
    e="${e//\$lane/.*}"
    e="${e//\$__rate_interval/5s}"
    e="${e//\$__range/1m}"
    r="$(query "$p" "$e")" || fail "dashboard query refused by $p: $e"
    n=$((n + 1))
    # GPU time's panels need kernel windows, which this demo runs without:
    # the windows demo above answered them.
    case "$e" in *lane_busy_* | *kernel_gap_* | *lane_kernel_share*) windows_only=$((windows_only + 1)); continue ;; esac
    grep -q '"result":\[{' <<<"$r" || fail "dashboard query returned nothing from $p: $e: $r"
  done < <(grep -oP '"expr": "\K(?:[^"\\]|\\.)*' "$DASH")
  ((n >= 10)) || fail "only $n queries found in the dashboard"
done
log "examples: config valid, rules pass their tests, dashboard imports; all $n dashboard queries accepted and all but the $windows_only of kernel windows return data, native and classic"

steps="$(values "$NATIVE" 'sum by (job) (rate(gpuspans_steps_total[5s]))' job | awk '{print $2}')"
awk -v s="$steps" 'BEGIN { exit !(s >= 50 && s <= 110) }' || fail "steps rate $steps/s, want about 100"
log "steps: ${steps}/s (configured 100)"
[[ "$(values "$NATIVE" 'max by (device) (gpuspans_device_up)' device)" == "0 1" ]] || fail "gpuspans_device_up is not 1: $(query "$NATIVE" gpuspans_device_up)"

# The dashboard's lane quantile panels (the recorded 1-minute p50, p90 and
# p99) read on both servers at one instant, once the demo has run a full
# minute: compared below, once the demo has written its trace, with the
# exact quantiles of the spans that ended in the minute before it.
while ((SECONDS - DEMO_STARTED < 75)); do sleep 1; done
DASH_T="$(date +%s.%N)"
for form in native classic; do
  if [[ $form == native ]]; then p=$NATIVE; else p=$CLASSIC; fi
  for q in p50 p90 p99; do
    curl -fsS --max-time 5 --get --data-urlencode "query=gpuspans:lane_duration_seconds:${q}_1m" \
      --data-urlencode "time=$DASH_T" "$p/api/v1/query" |
      python3 -c 'import json, sys; [print(sys.argv[1], sys.argv[2], r["metric"]["lane"], r["value"][1]) for r in json.load(sys.stdin)["data"]["result"]]' "$form" "$q" \
      >>"$TMP/dash-quantiles.txt" || fail "$form: gpuspans:lane_duration_seconds:${q}_1m refused"
  done
done
[[ "$(wc -l <"$TMP/dash-quantiles.txt")" == 12 ]] || fail "the dashboard's lane quantiles: want 2 servers x 3 quantiles x 2 lanes, got $(cat "$TMP/dash-quantiles.txt")"

# Kernel p99 and gap p50 and p99 as the dashboard reads them on the
# classic-only server: within 5% of the native server's panels, per kernel
# and per GPU (the windows demo, at the instant above), and within 10% of
# the nearest of the native histograms' own quantiles over 50, 60 and 70 s
# (not quite the same spans: the summary's minute is its windows begun
# within it, and at p99 of the demo's 600 gaps a minute six gaps decide:
# the native ones over 50 and 70 s read 3,610 and 4,100 us in one CI run). The
# classic buckets' histogram_quantile, what the panels read before, is
# logged beside.
# at PROM EXPR LABEL: "labelvalue value" lines at $DASH_T.
at() {
  curl -fsS --max-time 5 --get --data-urlencode "query=$2" --data-urlencode "time=$DASH_T" "$1/api/v1/query" |
    python3 -c 'import json, sys; [print(r["metric"].get(sys.argv[1], "-"), r["value"][1]) for r in json.load(sys.stdin)["data"]["result"]]' "$3"
}
: >"$ARTIFACTS/classic-vs-native.txt"
for spec in "kernel 0.99 kernel_recent_duration_seconds kernel_duration_seconds" \
  "gap 0.5 kernel_gap_recent_seconds kernel_gap_seconds" "gap 0.99 kernel_gap_recent_seconds kernel_gap_seconds"; do
  read -r what q summary hist <<<"$spec"
  label=device
  [[ $what == kernel ]] && label=kernel
  panel="max without (quantile) (gpuspans_${summary}{quantile=\"$q\"})"
  at "$WCMP_CLASSIC" "$panel" "$label" | sort >"$TMP/c"
  at "$WCMP_NATIVE" "$panel" "$label" | sort >"$TMP/n"
  at "$WCMP_NATIVE" "histogram_quantile($q, rate(gpuspans_${hist}[1m]))" "$label" | sort >"$TMP/h"
  at "$WCMP_CLASSIC" "histogram_quantile($q, rate(gpuspans_${hist}_bucket[5m]))" "$label" | sort >"$TMP/o"
  at "$WCMP_NATIVE" "histogram_quantile($q, rate(gpuspans_${hist}[50s]))" "$label" | sort >"$TMP/h50"
  at "$WCMP_NATIVE" "histogram_quantile($q, rate(gpuspans_${hist}[70s]))" "$label" | sort >"$TMP/h70"
  [[ -s "$TMP/c" ]] || fail "no $what p$q from the classic server: $panel"
  python3 - "$what" "$q" "$TMP/c" "$TMP/n" "$TMP/h" "$TMP/o" "$TMP/h50" "$TMP/h70" >>"$ARTIFACTS/classic-vs-native.txt" <<'PY' ||
import sys
what, q, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
c, n, h, o, h50, h70 = ({k: float(v) for k, v in (l.split() for l in open(p))} for p in paths)
bad = 0
for k in sorted(c):
    if k not in n or k not in h:
        print(f"{what} {k} p{q}: classic {c[k] * 1e6:.2f}us, the native server has none", file=sys.stderr)
        bad += 1
        continue
    vs_n, vs_h = c[k] / n[k] - 1, c[k] / h[k] - 1
    # The summary's minute is not the histogram's: held to the nearest of
    # the native histogram's reads over 50, 60 and 70 s.
    nearest = min((c[k] / x[k] - 1 for x in (h, h50, h70) if k in x and x[k] > 0), key=abs)
    old = f"{o[k] * 1e6:.2f}us ({100 * (o[k] / h[k] - 1):+.1f}%)" if k in o else "none"
    near = "/".join(f"{x[k] * 1e6:.2f}" if k in x else "-" for x in (h50, h70))
    print(f"{what} {k} p{q}: classic panel {c[k] * 1e6:.2f}us, native panel {n[k] * 1e6:.2f}us ({100 * vs_n:+.2f}%), "
          f"native histogram over the minute {h[k] * 1e6:.2f}us ({100 * vs_h:+.2f}%; over 50/70 s {near}us); "
          f"classic buckets' histogram_quantile {old}")
    bad += abs(vs_n) > 0.05 or abs(nearest) > 0.10
sys.exit(1 if bad or not c else 0)
PY
    fail "$what p$q on the classic server over 5% off the native one, or 10% off its histogram: $(tail -3 "$ARTIFACTS/classic-vs-native.txt")"
done
while IFS= read -r l; do log "classic vs native: $l"; done <"$ARTIFACTS/classic-vs-native.txt"

# A regression: decode 20% slower. Its eager kernels (185 us) are scaled;
# the 35 us graph replayed in it is not, so x1.24 makes the lane
# (185*1.24 + 35) / 220 = 1.20 times as long.
P99=gpuspans:lane_duration_seconds:p99_1m
wait_for 30 "a recorded decode p99 on both servers" bash -c \
  "[[ -n \"\$(curl -fsS --max-time 5 --get --data-urlencode 'query=$P99{lane=\"decode\"}' '$NATIVE/api/v1/query' | grep -o '\"value\"')\" && -n \"\$(curl -fsS --max-time 5 --get --data-urlencode 'query=$P99{lane=\"decode\"}' '$CLASSIC/api/v1/query' | grep -o '\"value\"')\" ]]"
before_native="$(value "$NATIVE" "$P99" lane decode)"
before_classic="$(value "$CLASSIC" "$P99" lane decode)"
log "recorded decode p99 before: native $(awk -v v="$before_native" 'BEGIN {printf "%.1f", v * 1e6}')us, classic $(awk -v v="$before_classic" 'BEGIN {printf "%.1f", v * 1e6}')us"
curl -fsS --max-time 5 -X POST -H 'Content-Type: application/octet-stream' --data 'decode=1.24' "$DEMO_URL/control/sim" >"$TMP/sim.txt" || fail "POST /control/sim"
grep -q 'decode=1.24' "$TMP/sim.txt" || fail "/control/sim answered $(cat "$TMP/sim.txt")"
slowed=$SECONDS
log "decode slowed by 20% (/control/sim: $(cat "$TMP/sim.txt"))"
moved() {
  local n c
  n="$(value "$NATIVE" "$P99" lane decode)"
  c="$(value "$CLASSIC" "$P99" lane decode)"
  awk -v n="$n" -v c="$c" -v bn="$before_native" -v bc="$before_classic" \
    'BEGIN { exit !(n != "" && c != "" && n >= 1.15 * bn && c >= 1.15 * bc) }'
}
wait_for 120 "the recorded decode p99 to move by 15% on both servers" moved
after_native="$(value "$NATIVE" "$P99" lane decode)"
after_classic="$(value "$CLASSIC" "$P99" lane decode)"
shift_line="recorded decode p99 moved within $((SECONDS - slowed))s: native $(awk -v a="$after_native" -v b="$before_native" 'BEGIN {printf "%.1fus -> %.1fus (%+.1f%%)", b * 1e6, a * 1e6, 100 * (a / b - 1)}'), classic $(awk -v a="$after_classic" -v b="$before_classic" 'BEGIN {printf "%.1fus -> %.1fus (%+.1f%%)", b * 1e6, a * 1e6, 100 * (a / b - 1)}')"
log "$shift_line"
echo "$shift_line" >"$ARTIFACTS/p99-shift.txt"

# Exactness: stop spans (level off), let both servers scrape the final
# totals, and compare PromQL quantiles over every landed span (the
# cumulative histograms, no rate) with the exact quantiles of those same
# spans in the demo's timeline trace, written when it exits.
curl -fsS --max-time 5 -X PUT --data off "$DEMO_URL/control/level" >/dev/null || fail "PUT /control/level off"
# Spans landed per lane: a native-only server keeps no _count series.
landed() {
  { values "$NATIVE" 'histogram_count(sum by (lane) (gpuspans_lane_duration_seconds))' lane | sort
    values "$CLASSIC" 'sum by (lane) (gpuspans_lane_duration_seconds_count)' lane | sort; } | tr '\n' ' '
}
demo_landed() {
  curl -fsS --max-time 5 "$DEMO_URL/metrics" |
    sed -n 's/^gpuspans_lane_duration_seconds_count{device="0",lane="\([a-z]*\)"} \([0-9]*\)$/\1 \2/p' | sort
}
sleep 3
settled() { [[ "$(landed)" == "$({ demo_landed; demo_landed; } | tr '\n' ' ')" ]]; }
wait_for 20 "both servers to scrape the final span counts" settled
counts="$(demo_landed)"
declare -A promq
for q in 0.5 0.99; do
  for lane in prefill decode; do
    promq[native_${lane}_$q]="$(value "$NATIVE" "histogram_quantile($q, sum by (lane) (gpuspans_lane_duration_seconds))" lane "$lane")"
    promq[classic_${lane}_$q]="$(value "$CLASSIC" "histogram_quantile($q, sum by (le, lane) (gpuspans_lane_duration_seconds_bucket))" lane "$lane")"
  done
done
kill -TERM "$DEMO_PID"
wait_for 20 "the demo to exit and write its trace" grep -q '^trace: ' "$DEMO_LOG"
[[ -s "$TRACE" ]] || fail "no trace written: $(tail -5 "$DEMO_LOG")"
for lane in prefill decode; do
  grep -o "\"dur\":[0-9.]*,\"name\":\"$lane\",\"cat\":\"lane\"" "$TRACE" | sed 's/"dur":\([0-9.]*\),.*/\1/' | sort -g >"$TMP/$lane.us"
  n="$(wc -l <"$TMP/$lane.us")"
  want_n="$(awk -v l="$lane" '$1 == l {print $2}' <<<"$counts")"
  [[ "$n" == "$want_n" ]] || fail "lane $lane: $n spans in the trace, $want_n landed: not the same spans"
  for q in 0.5 0.99; do
    # Nearest rank, as the hub ranks.
    exact="$(awk -v q="$q" -v n="$n" 'BEGIN {r = int(q * n); if (r < q * n) r++; if (r < 1) r = 1} NR == r {print $1 / 1e6}' "$TMP/$lane.us")"
    for form in native classic; do
      got="${promq[${form}_${lane}_$q]}"
      [[ -n "$got" ]] || fail "$form: no PromQL p$q for lane $lane"
      err="$(awk -v g="$got" -v e="$exact" 'BEGIN {d = (g - e) / e; printf "%+.2f", 100 * d}')"
      line="lane $lane p$q over $n spans: exact $(awk -v e="$exact" 'BEGIN {printf "%.1f", e * 1e6}')us, $form PromQL $(awk -v g="$got" 'BEGIN {printf "%.1f", g * 1e6}')us ($err%)"
      echo "$line" >>"$ARTIFACTS/quantile-accuracy.txt"
      awk -v g="$got" -v e="$exact" 'BEGIN { d = (g - e) / e; exit !(d <= 0.10 && d >= -0.10) }' || fail "$line: over 10% off"
      log "$line"
    done
  done
done
# The dashboard's lane quantiles against the exact ones of the spans that
# ended in the minute before they were read (the hub's windows hold 50 to
# 60 s of spans, by landing): within 5%, on both servers.
python3 - "$TRACE" "$DASH_T" "$TMP/dash-quantiles.txt" >>"$ARTIFACTS/quantile-accuracy.txt" <<'PY' || fail "a dashboard lane quantile over 5% off (above; $ARTIFACTS/quantile-accuracy.txt)"
import json, math, sys
trace, t, read = json.load(open(sys.argv[1])), float(sys.argv[2]), sys.argv[3]
base = int(trace.get("baseTimeNanoseconds", 0))
ends = {}
for e in trace["traceEvents"]:
    if e.get("cat") == "lane" and e.get("ph") == "X":
        end = base + 1000 * (float(e["ts"]) + float(e["dur"]))
        if t * 1e9 - 60e9 <= end <= t * 1e9:
            ends.setdefault(e["name"], []).append(float(e["dur"]) / 1e6)
bad = 0
for line in open(read):
    form, q, lane, got = line.split()
    ds = sorted(ends.get(lane, []))
    if not ds:
        print(f"no {lane} spans in the minute before the read", file=sys.stderr)
        sys.exit(1)
    r = max(1, math.ceil(float(q[1:]) / 100 * len(ds)))
    exact = ds[r - 1]
    err = float(got) / exact - 1
    print(f"dashboard {form}: lane {lane} {q} over the last minute ({len(ds)} spans): exact {exact * 1e6:.1f}us, panel {float(got) * 1e6:.1f}us ({100 * err:+.2f}%)")
    bad += abs(err) > 0.05
sys.exit(1 if bad else 0)
PY
tail -12 "$ARTIFACTS/quantile-accuracy.txt" | while IFS= read -r l; do log "$l"; done
log "PASS in $((SECONDS - E2E_START))s"
